package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// InputError is a manifest the API server would refuse. It always names
// the file and document.
type InputError struct {
	Source Source
	Err    error
}

func (e *InputError) Error() string { return fmt.Sprintf("%s: %v", e.Source, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// Loader reads manifests as `kubectl apply -f` would: files, directories
// (their .yaml, .yml and .json files, not recursive) and "-" for stdin;
// multi-document YAML or JSON; List objects.
type Loader struct {
	Stdin    io.Reader
	Defaults Defaults
	// Warn receives what is skipped (kinds the kubelet does not read).
	Warn func(string)
	// NoValidation loads objects the API server would refuse, for the
	// validate command, which reports every error rather than the first.
	NoValidation bool
}

// Load reads every path into one cluster.
func (l *Loader) Load(paths []string) (*Cluster, error) {
	c := New()
	for _, p := range paths {
		if err := l.loadPath(c, p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (l *Loader) loadPath(c *Cluster, p string) error {
	if p == "-" {
		if l.Stdin == nil {
			return errors.New("-: no standard input")
		}
		return l.loadStream(c, "-", l.Stdin)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return l.loadFile(c, p)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("%s: no .yaml, .yml or .json files in the directory", p)
	}
	for _, f := range files {
		if err := l.loadFile(c, f); err != nil {
			return err
		}
	}
	return nil
}

func (l *Loader) loadFile(c *Cluster, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return l.loadStream(c, name, f)
}

func (l *Loader) loadStream(c *Cluster, name string, r io.Reader) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &InputError{Source{File: name, Doc: doc}, err}
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		if err := l.loadDocument(c, Source{File: name, Doc: doc}, raw); err != nil {
			return err
		}
	}
}

// stripComments drops YAML comment lines and document markers, so a
// document of comments only, or the empty document between two "---" (as
// helm template writes for a template that renders nothing), counts as
// empty, as kubectl takes it.
func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) {
			continue
		}
		if len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// wantAPIVersion is the group/version each kind read is served at.
var wantAPIVersion = map[string]string{
	"CSIDriver":             "storage.k8s.io/v1",
	"VolumeAttachment":      "storage.k8s.io/v1",
	"Pod":                   "v1",
	"PersistentVolume":      "v1",
	"PersistentVolumeClaim": "v1",
	"Secret":                "v1",
	"ServiceAccount":        "v1",
	"Node":                  "v1",
}

func (l *Loader) loadDocument(c *Cluster, src Source, raw []byte) error {
	data, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return &InputError{src, err}
	}
	var tm typeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return &InputError{src, fmt.Errorf("not a Kubernetes object: %v", err)}
	}
	if tm.Kind == "" {
		return &InputError{src, errors.New("kind: Required value")}
	}
	if tm.APIVersion == "" {
		return &InputError{src, errors.New("apiVersion: Required value")}
	}
	if strings.HasSuffix(tm.Kind, "List") && src.Item == 0 {
		return l.loadList(c, src, data)
	}
	want, known := wantAPIVersion[tm.Kind]
	if !known {
		l.warn(fmt.Sprintf("%s: skipping %s %s (the kubelet simulation does not read this kind)", src, tm.APIVersion, tm.Kind))
		return nil
	}
	if tm.APIVersion != want {
		return &InputError{src, fmt.Errorf("apiVersion: Unsupported value: %q: %s is read as %s", tm.APIVersion, tm.Kind, want)}
	}
	obj := newObject(tm.Kind)
	if err := decodeStrict(data, obj); err != nil {
		return &InputError{src, err}
	}
	if d, ok := obj.(*storagev1.CSIDriver); ok {
		for _, f := range l.Defaults.droppedSet(d) {
			l.warn(fmt.Sprintf("%s: CSIDriver %s: %s is set, but the API server of this release drops it (its feature gate is off at this --kubelet-version and --feature-gates), so no kubelet sees it", src, d.Name, f))
		}
	}
	if err := l.Defaults.apply(obj); err != nil {
		return &InputError{src, err}
	}
	if l.NoValidation {
		return c.Add(obj, src)
	}
	if err := validate(obj, l.Defaults); err != nil {
		return &InputError{src, err}
	}
	return c.Add(obj, src)
}

func (l *Loader) loadList(c *Cluster, src Source, data []byte) error {
	var list struct {
		typeMeta
		Metadata map[string]any   `json:"metadata"`
		Items    []map[string]any `json:"items"`
	}
	if err := decodeStrict(data, &list); err != nil {
		return &InputError{src, err}
	}
	for i, item := range list.Items {
		b, err := json.Marshal(item)
		if err != nil {
			return &InputError{src, err}
		}
		s := src
		s.Item = i + 1
		if err := l.loadDocument(c, s, b); err != nil {
			return err
		}
	}
	return nil
}

func newObject(kind string) any {
	switch kind {
	case "CSIDriver":
		return &storagev1.CSIDriver{}
	case "VolumeAttachment":
		return &storagev1.VolumeAttachment{}
	case "Pod":
		return &corev1.Pod{}
	case "PersistentVolume":
		return &corev1.PersistentVolume{}
	case "PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "Secret":
		return &corev1.Secret{}
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	case "Node":
		return &corev1.Node{}
	}
	return nil
}

// decodeStrict decodes as the API server does with fieldValidation=Strict:
// unknown and duplicate fields are errors, named by their path.
func decodeStrict(data []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(data, into, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func (l *Loader) warn(s string) {
	if l.Warn != nil {
		l.Warn(s)
	}
}

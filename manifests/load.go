package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Loader reads manifests as `kubectl apply -f` would: files, directories
// (their .yaml, .yml and .json files; with Recursive, those of their
// subdirectories too, as kubectl -R) and "-" for stdin; multi-document YAML
// or JSON; List objects.
type Loader struct {
	Stdin    io.Reader
	Defaults Defaults
	// Warn receives what is skipped (kinds the kubelet does not read).
	Warn func(string)
	// NoValidation loads objects the API server would refuse, for the
	// validate command, which reports every error rather than the first.
	NoValidation bool
	// Recursive reads the subdirectories of a directory (kubectl's -R);
	// without it, subdirectories are named in a warning.
	Recursive bool
	// Limits bound one Load; zero fields take the defaults.
	Limits Limits
	// Raw, when set, receives every object document (and List item) as
	// JSON, whatever its kind, before it is decoded: validate --apiserver
	// submits the objects as written to the API server.
	Raw func(src Source, data []byte)
	// Other, when set, receives the documents of kinds the kubelet does
	// not read (CustomResourceDefinitions, RBAC, custom resources), as
	// JSON, instead of the warning that skips them: --apiserver creates
	// them through the API.
	Other func(src Source, kind string, data []byte)

	budget   *budget
	problems []error
	lines    map[Source]*lineIndex
	files    []string
	refused  map[string]bool // objects not stored for their errors, by ObjectName
}

// Files lists the files read (and "-"), in the order read.
func (l *Loader) Files() []string { return l.files }

// Load reads every path into one cluster. Every problem of every file is
// collected (a pre-flight shows them all at once); the error is the one
// problem, or Problems when there are several. The cluster holds what
// could be read even then, for the validate command; only the limits stop
// the reading early.
func (l *Loader) Load(paths []string) (*Cluster, error) {
	lim := l.Limits
	if lim.Bytes <= 0 {
		lim.Bytes = DefaultLimits.Bytes
	}
	if lim.Objects <= 0 {
		lim.Objects = DefaultLimits.Objects
	}
	l.budget = &budget{limits: lim}
	l.problems, l.files = nil, nil
	l.lines = map[Source]*lineIndex{}
	l.refused = map[string]bool{}
	c := New()
	for _, p := range paths {
		if err := l.loadPath(c, p); err != nil {
			l.problems = append(l.problems, err)
		}
		if l.budget.exceeded() {
			break
		}
	}
	switch len(l.problems) {
	case 0:
		return c, nil
	case 1:
		return c, l.problems[0]
	}
	return c, Problems(l.problems)
}

// Line is the file line of a field of the object read at src (a path
// such as spec.volumes[0].csi.driver, or the deepest part of it the
// manifest has); the object's first line for "".
func (l *Loader) Line(src Source, path string) int {
	return l.lines[src.Object()].line(path)
}

// problem records one problem of the input and goes on reading.
func (l *Loader) problem(err error) { l.problems = append(l.problems, err) }

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
	files, subdirs, err := manifestFiles(p, l.Recursive)
	if err != nil {
		return err
	}
	if len(subdirs) > 0 {
		l.warn(fmt.Sprintf("%s: subdirectories not read: %s (-R reads them)", p, strings.Join(subdirs, ", ")))
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no .yaml, .yml or .json files in the directory", p)
	}
	for _, f := range files {
		if err := l.loadFile(c, f); err != nil {
			l.problem(err)
		}
		if l.budget.exceeded() {
			return nil
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
	l.files = append(l.files, name)
	docs := newDocReader(&countingReader{r: r, b: l.budget})
	for doc := 1; ; doc++ {
		raw, start, err := docs.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		src := Source{File: name, Doc: doc}
		if err != nil {
			// The rest of the stream cannot be split into documents.
			src.Line = start
			return &InputError{Source: src, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		if err := l.countObject(src); err != nil {
			return err
		}
		l.lines[src] = newLineIndex(raw, start)
		if err := l.loadDocument(c, src, raw); err != nil {
			l.problem(err)
		}
		if l.budget.exceeded() {
			return nil
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
	"StorageClass":          "storage.k8s.io/v1",
	"Namespace":             "v1",
	// Applied to the other objects by the admission step.
	"MutatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
}

// Kinds lists the kinds the loader reads (every other kind is skipped with
// a warning), sorted, for messages that name them.
func Kinds() []string {
	out := make([]string, 0, len(wantAPIVersion))
	for k := range wantAPIVersion {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// loadDocument reads one object (or List), recording each of its problems;
// the error returned is the one that stopped it from being read at all.
func (l *Loader) loadDocument(c *Cluster, src Source, raw []byte) error {
	data, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		line, msg := syntaxLine(err)
		if line > 0 {
			src.Line = l.lines[src].start + line - 1
		}
		return &InputError{Source: src, Err: errors.New(msg)}
	}
	var tm typeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return l.inputError(src, "", "", fmt.Errorf("not a Kubernetes object: %v", err))
	}
	if tm.Kind == "" {
		return l.inputError(src, "", "kind", errors.New("kind: Required value"))
	}
	if tm.APIVersion == "" {
		return l.inputError(src, "", "apiVersion", errors.New("apiVersion: Required value"))
	}
	if strings.HasSuffix(tm.Kind, "List") && src.Item == 0 {
		return l.loadList(c, src, data)
	}
	if l.Raw != nil {
		l.Raw(src, data)
	}
	want, known := wantAPIVersion[tm.Kind]
	if !known && l.Other != nil {
		l.Other(src, tm.Kind, data)
		return nil
	}
	if !known {
		if l.Raw != nil {
			return nil // not skipped: Raw's reader judges it
		}
		l.warn(fmt.Sprintf("%s: skipping %s %s (the kubelet simulation does not read this kind)", src, tm.APIVersion, tm.Kind))
		return nil
	}
	if tm.APIVersion != want {
		return l.inputError(src, "", "apiVersion", fmt.Errorf("apiVersion: Unsupported value: %q: %s is read as %s", tm.APIVersion, tm.Kind, want))
	}
	obj := newObject(tm.Kind)
	strict, err := l.decode(src, data, obj)
	if err != nil {
		return err
	}
	return l.admit(c, src, obj, strict)
}

// decode decodes strictly: unknown and duplicate fields are returned one
// by one (the object is still read, so that later checks see it), a value
// of the wrong type stops the document.
func (l *Loader) decode(src Source, data []byte, obj any) ([]fieldProblem, error) {
	strict, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, l.inputError(src, "", typeErrorPath(err), err)
	}
	return strictProblems(strict, obj), nil
}

// admit defaults, validates and stores an object, recording its unknown
// fields and every validation error (the validate command judges CSIDriver
// objects itself).
func (l *Loader) admit(c *Cluster, src Source, obj any, strict []fieldProblem) error {
	if d, ok := obj.(*storagev1.CSIDriver); ok {
		for _, f := range l.Defaults.droppedSet(d) {
			l.warn(fmt.Sprintf("%s: CSIDriver %s: %s is set, but the API server of this release drops it (its feature gate is off at this --kubelet-version and --feature-gates), so no kubelet sees it", src, d.Name, f))
		}
	}
	err := l.Defaults.apply(obj)
	// Named as the defaulted object is (its namespace set).
	name := ObjectName(obj)
	for _, p := range strict {
		l.problem(l.inputError(src, name, p.path, errors.New(p.message)))
	}
	if err != nil {
		return l.inputError(src, name, fieldPathOf(err.Error()), err)
	}
	_, isDriver := obj.(*storagev1.CSIDriver)
	if !l.NoValidation || !isDriver {
		errs := validationErrors(obj, l.Defaults)
		for _, e := range errs {
			l.problem(l.inputError(src, name, fieldPathOf(e), errors.New(e)))
		}
		if len(errs) > 0 && !l.NoValidation {
			l.refused[name] = true
			return nil
		}
	}
	if err := c.Add(obj, src); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Source.Line = l.Line(src, "metadata.name")
		}
		return err
	}
	return nil
}

func (l *Loader) loadList(c *Cluster, src Source, data []byte) error {
	var list struct {
		typeMeta
		Metadata map[string]any   `json:"metadata"`
		Items    []map[string]any `json:"items"`
	}
	if err := decodeStrict(data, &list); err != nil {
		return l.inputError(src, "", "", err)
	}
	if left := l.budget.limits.Objects - l.budget.objects; len(list.Items) > left {
		s := src
		s.Item = left + 1
		return &InputError{Source: s, Err: fmt.Errorf("more than %d objects (documents and List items) in one run (the simulator's limit)", l.budget.limits.Objects)}
	}
	for i, item := range list.Items {
		b, err := json.Marshal(item)
		if err != nil {
			return &InputError{Source: src, Err: err}
		}
		s := src
		s.Item = i + 1
		if err := l.countObject(s); err != nil {
			return err
		}
		l.lines[s] = l.lines[src].sub(fmt.Sprintf("items[%d]", i))
		if err := l.loadDocument(c, s, b); err != nil {
			l.problem(err)
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
	case "Namespace":
		return &corev1.Namespace{}
	case "StorageClass":
		return &storagev1.StorageClass{}
	case "MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
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

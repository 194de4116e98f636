package manifests

import (
	"bufio"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var lineRE = regexp.MustCompile(`: line \d+:`)

// withoutLines drops the ": line N" of problems, for tests about the
// messages; the lines are TestProblemLines' matter.
func withoutLines(s string) string { return lineRE.ReplaceAllString(s, ":") }

// TestProblemLines: one Load reports every problem of every document, each
// at the line to edit: a syntax error at the badly indented line (go-yaml
// names the line before it), unknown fields with a did-you-mean, every
// validation error of an object, a List item's field, a duplicate object.
func TestProblemLines(t *testing.T) {
	content := strings.Join([]string{
		/* 1 */ "apiVersion: storage.k8s.io/v1",
		/* 2 */ "kind: CSIDriver",
		/* 3 */ "metadata:",
		/* 4 */ "  name: d.example.com",
		/* 5 */ "spec:",
		/* 6 */ "  podInfoOnMout: true",
		/* 7 */ "  attachRequired: false",
		/* 8 */ "---",
		/* 9 */ "apiVersion: v1",
		/* 10 */ "kind: Secret",
		/* 11 */ "metadata:",
		/* 12 */ "  name: s",
		/* 13 */ " stringData: {a: b}",
		/* 14 */ "---",
		/* 15 */ "apiVersion: v1",
		/* 16 */ "kind: Pod",
		/* 17 */ "metadata: {name: p}",
		/* 18 */ "spec:",
		/* 19 */ "  volumes:",
		/* 20 */ "  - name: a",
		/* 21 */ "    csi: {driver: d.example.com}",
		/* 22 */ "  - name: a",
		/* 23 */ "    persistentVolumeClaim: {}",
		/* 24 */ "---",
		/* 25 */ "apiVersion: v1",
		/* 26 */ "kind: List",
		/* 27 */ "items:",
		/* 28 */ "- apiVersion: v1",
		/* 29 */ "  kind: PersistentVolume",
		/* 30 */ "  metadata: {name: pv}",
		/* 31 */ "  spec:",
		/* 32 */ "    csi:",
		/* 33 */ "      driver: d.example.com",
		/* 34 */ "---",
		/* 35 */ "apiVersion: storage.k8s.io/v1",
		/* 36 */ "kind: CSIDriver",
		/* 37 */ "metadata:",
		/* 38 */ "  name: d.example.com",
	}, "\n")
	f := writeFile(t, t.TempDir(), "m.yaml", content)
	l := &Loader{}
	c, err := l.Load([]string{f})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v (%T), want Problems", err, err)
	}
	want := []string{
		f + `: document 1: line 6: unknown field "spec.podInfoOnMout" (did you mean "spec.podInfoOnMount"?)`,
		f + `: document 2: line 13: yaml: did not find expected key`,
		f + `: document 3: line 22: spec.volumes[1].name: Duplicate value: "a"`,
		f + `: document 3: line 23: spec.volumes[1].persistentVolumeClaim.claimName: Required value`,
		f + `: document 4, items[0]: line 32: spec.csi.volumeHandle: Required value`,
		f + `: document 5: line 38: CSIDriver d.example.com already defined at ` + f + `: document 1`,
	}
	got := make([]string, len(ps))
	for i, p := range ps {
		got[i] = p.Error()
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The loader reads on past the problems: the first CSIDriver (its
	// unknown field aside, valid) is there; the invalid Pod is not.
	if d, ok := c.CSIDriver("d.example.com"); !ok || *d.Spec.AttachRequired {
		t.Errorf("the first CSIDriver was not stored")
	}
	if len(c.Pods()) != 0 {
		t.Errorf("an invalid Pod was stored")
	}
}

// TestProblemLinesNoValidation: with NoValidation (the validate command)
// the objects are stored despite their problems, so that references to
// them resolve, and Line finds each field.
func TestProblemLinesNoValidation(t *testing.T) {
	content := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  volumes:\n  - name: a\n    csi:\n      driver: d\n      volumeAtributes: {}\n"
	f := writeFile(t, t.TempDir(), "p.yaml", content)
	l := &Loader{NoValidation: true}
	c, err := l.Load([]string{f})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Source.Line != 10 || ie.Object != "Pod default/p" {
		t.Fatalf("error %v, want one at line 10 naming the pod", err)
	}
	if !strings.Contains(ie.Error(), `(did you mean "spec.volumes[0].csi.volumeAttributes"?)`) {
		t.Errorf("no did-you-mean: %v", ie)
	}
	if len(c.Pods()) != 1 {
		t.Fatal("the pod was not stored")
	}
	pod := c.Pods()[0]
	src := c.SourceOf("Pod", pod.Namespace, pod.Name)
	for path, line := range map[string]int{"": 1, "spec.volumes[0].csi.driver": 9, "spec.volumes[0]": 7, "spec.volumes[0].csi.nodePublishSecretRef": 8, "metadata.name": 4} {
		if got := l.Line(src, path); got != line {
			t.Errorf("Line(%q) = %d, want %d", path, got, line)
		}
	}
}

// TestSyntaxLines: go-yaml's parser errors name the line before the bad
// one; the loader names the bad one, its scanner errors stay as they are.
func TestSyntaxLines(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		line int
	}{
		{"a: 1\nb:\n  c: 2\n   d: 3\n", 4},
		{"a: 1\n b: 2\n", 2},
		{"a: [1, 2\nb: 3\n", 2},
		{"a: 1\n\tb: 2\n", 2},
		{"# comment\n---\na: 1\nb:\n  - x\n  y: 2\n", 6},
	} {
		l := &Loader{Stdin: strings.NewReader(tc.doc)}
		_, err := l.Load([]string{"-"})
		var ie *InputError
		if !errors.As(err, &ie) || ie.Source.Line != tc.line {
			t.Errorf("%q: error %v, want it at line %d", tc.doc, err, tc.line)
		}
	}
}

// TestDocReaderMatchesYAMLReader: the documents, and so their numbers,
// are apimachinery's.
func TestDocReaderMatchesYAMLReader(t *testing.T) {
	for _, in := range []string{
		"a: 1\n---\nb: 2\n", "---\na: 1\n", "a: 1\n---\n---\nb: 2\n---\n", "# c\n---\n# d\n---\na: 1", "a: 1\n--- # x\nb: 2\n",
	} {
		var want []string
		r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(in)))
		for {
			b, err := r.Read()
			if err != nil {
				break
			}
			want = append(want, string(b))
		}
		var got []string
		d := newDocReader(strings.NewReader(in))
		for {
			b, _, err := d.next()
			if err != nil {
				break
			}
			got = append(got, string(b))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: documents %q, want %q", in, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	for name, want := range map[string]string{
		"podInfoOnMout":    "podInfoOnMount",
		"PodInfoOnMount":   "podInfoOnMount",
		"attachRequird":    "attachRequired",
		"fsGroupPolcy":     "fsGroupPolicy",
		"tokenRequest":     "tokenRequests",
		"storageCapacit":   "storageCapacity",
		"somethingElse":    "",
		"x":                "",
		"requiresRepublsh": "requiresRepublish",
	} {
		known := knownFields(reflect.TypeOf(&storagev1.CSIDriver{}), []string{"spec"})
		if got := suggest(name, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
	// Inlined metadata: the top level has apiVersion, kind, metadata, spec.
	if got := suggest("metdata", knownFields(reflect.TypeOf(&corev1.Pod{}), nil)); got != "metadata" {
		t.Errorf("top level: %q", got)
	}
	if got := suggest("clamName", knownFields(reflect.TypeOf(&corev1.Pod{}), []string{"spec", "volumes", "0", "persistentVolumeClaim"})); got != "claimName" {
		t.Errorf("nested: %q", got)
	}
}

// TestMissingReferences: every name that leads nowhere, each at the field
// that gives it: the node-side Secrets of a PV, a claim's PV, a pod's
// claim, inline Secret, inline driver's CSIDriver and ServiceAccount; what
// the input holds (and the "default" ServiceAccount) is no finding.
func TestMissingReferences(t *testing.T) {
	in := strings.Join([]string{
		"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  csi:\n    driver: d\n    volumeHandle: h\n    nodeStageSecretRef: {name: stage, namespace: ns}\n    nodePublishSecretRef: {name: present, namespace: ns}\n    controllerPublishSecretRef: {name: ctrl, namespace: ns}",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: present, namespace: ns}",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: lost, namespace: ns}\nspec: {volumeName: nowhere}",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: unbound, namespace: ns}\nspec: {}",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: ok, namespace: ns}\nspec: {volumeName: pv}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  serviceAccountName: builder\n  volumes:\n  - {name: a, persistentVolumeClaim: {claimName: ok}}\n  - {name: b, persistentVolumeClaim: {claimName: gone}}\n  - {name: c, csi: {driver: e.example.com, nodePublishSecretRef: {name: inline}}}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ns}\nspec: {serviceAccountName: default}",
	}, "\n---\n")
	l := &Loader{Stdin: strings.NewReader(in)}
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.MissingReferences() {
		got = append(got, fmt.Sprintf("%s %s line %d %s: %s", r.Severity, r.Object, l.Line(r.Source, r.Path), r.Path, r.Message))
	}
	want := []string{
		"error PersistentVolume pv line 8 spec.csi.nodeStageSecretRef: spec.csi.nodeStageSecretRef: Secret ns/stage not found: the kubelet fails NodeStageVolume without it (add the Secret to the input)",
		`error PersistentVolumeClaim ns/lost line 19 spec.volumeName: spec.volumeName: PersistentVolume "nowhere" not found (add it to the input)`,
		"error PersistentVolumeClaim ns/unbound line 24 spec.volumeName: spec.volumeName: the claim names no PersistentVolume: the kubelet mounts bound claims only (set spec.volumeName to a PersistentVolume of the input)",
		"error Pod ns/p line 38 spec.volumes[1].persistentVolumeClaim.claimName: spec.volumes[1].persistentVolumeClaim.claimName: PersistentVolumeClaim ns/gone not found (add it to the input)",
		"error Pod ns/p line 39 spec.volumes[2].csi.nodePublishSecretRef: spec.volumes[2].csi.nodePublishSecretRef: Secret ns/inline not found: the kubelet fails NodePublishVolume without it (inline volumes read it in the pod's namespace)",
		`error Pod ns/p line 39 spec.volumes[2].csi.driver: spec.volumes[2].csi.driver: no CSIDriver named "e.example.com": the kubelet refuses inline volumes of a driver without one: volume mode "Ephemeral" not supported by driver e.example.com (no CSIDriver object)`,
		`error Pod ns/p line 35 spec.serviceAccountName: spec.serviceAccountName: ServiceAccount ns/builder not found: the API server refuses the pod (error looking up service account ns/builder: serviceaccount "builder" not found; add it to the input)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("references:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Kinds names every kind read, Namespace and MutatingWebhookConfiguration
// included, once each.
func TestKinds(t *testing.T) {
	kinds := Kinds()
	for _, k := range []string{"CSIDriver", "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume", "PersistentVolumeClaim", "Pod", "Secret", "ServiceAccount", "VolumeAttachment"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("Kinds() %v lacks %s", kinds, k)
		}
	}
	if !slices.IsSorted(kinds) || len(slices.Compact(slices.Clone(kinds))) != len(kinds) {
		t.Errorf("Kinds() %v: not sorted or not unique", kinds)
	}
}

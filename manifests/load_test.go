package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	driverDoc = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: hostpath.csi.k8s.io}
spec: {attachRequired: false}`
	pvDoc = `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1}`
	pvcDoc = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-1}
spec: {volumeName: pv-1, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`
	podDoc = `apiVersion: v1
kind: Pod
metadata: {name: app-1}
spec:
  containers: [{name: app, image: busybox}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data-1}}]`
)

// Every kind the kubelet reads, from one multi-document YAML file, each
// remembered with its file and document number.
func TestLoadMultiDocumentYAML(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "all.yaml", strings.Join([]string{
		driverDoc, pvDoc, pvcDoc, podDoc,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {k: v}",
		"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: app-sa}",
		"apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va-1}\nspec: {attacher: a, nodeName: node-1, source: {persistentVolumeName: pv-1}}",
		"apiVersion: v1\nkind: Node\nmetadata: {name: node-1}",
	}, "\n---\n"))
	c, err := (&Loader{}).Load([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		kind, ns, name string
		found          bool
		doc            int
	}{
		{"CSIDriver", "", "hostpath.csi.k8s.io", ok(c.CSIDriver("hostpath.csi.k8s.io")), 1},
		{"PersistentVolume", "", "pv-1", ok(c.PersistentVolume("pv-1")), 2},
		{"PersistentVolumeClaim", "default", "data-1", ok(c.PersistentVolumeClaim("default", "data-1")), 3},
		{"Pod", "default", "app-1", len(c.Pods()) == 1 && c.Pods()[0].Name == "app-1", 4},
		{"Secret", "ns", "s", ok(c.Secret("ns", "s")), 5},
		{"ServiceAccount", "default", "app-sa", ok(c.ServiceAccount("default", "app-sa")), 6},
		{"VolumeAttachment", "", "va-1", ok(c.VolumeAttachment("va-1")), 7},
		{"Node", "", "node-1", ok(c.Node("node-1")), 8},
	}
	for _, ch := range checks {
		t.Run(ch.kind, func(t *testing.T) {
			if !ch.found {
				t.Errorf("not found")
			}
			want := Source{File: f, Doc: ch.doc}
			if got := c.SourceOf(ch.kind, ch.ns, ch.name); got != want {
				t.Errorf("source = %+v, want %+v", got, want)
			}
		})
	}
	if got := len(c.CSIDrivers()); got != 1 {
		t.Errorf("CSIDrivers: %d", got)
	}
}

func ok[T any](_ T, found bool) bool { return found }

// JSON documents, a List and a directory of files; Source strings.
func TestLoadJSONListAndDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.json", `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"csi":{"driver":"d","volumeHandle":"h"}}}`)
	writeFile(t, dir, "a.yml", "apiVersion: v1\nkind: List\nitems:\n- "+strings.ReplaceAll(pvcDoc, "\n", "\n  ")+"\n- "+strings.ReplaceAll(podDoc, "\n", "\n  "))
	writeFile(t, dir, "c.txt", "not: a manifest")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub.yaml"), "x.yaml", driverDoc)

	c, err := (&Loader{}).Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind, ns, name string
		want           string
	}{
		{"PersistentVolumeClaim", "default", "data-1", dir + "/a.yml: document 1, items[0]"},
		{"Pod", "default", "app-1", dir + "/a.yml: document 1, items[1]"},
		{"PersistentVolume", "", "pv-1", dir + "/b.json: document 1"},
	}
	for _, tc := range tests {
		if got := c.SourceOf(tc.kind, tc.ns, tc.name).String(); got != tc.want {
			t.Errorf("%s source = %q, want %q", tc.kind, got, tc.want)
		}
	}
	if _, found := c.CSIDriver("hostpath.csi.k8s.io"); found {
		t.Errorf("directory loading recursed into a subdirectory")
	}
	if got := (Source{}).String(); got != "(built in)" {
		t.Errorf("zero Source = %q", got)
	}
}

func TestLoadStdin(t *testing.T) {
	c, err := (&Loader{Stdin: strings.NewReader(pvDoc)}).Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SourceOf("PersistentVolume", "", "pv-1").String(); got != "-: document 1" {
		t.Errorf("source = %q", got)
	}
	if _, err := (&Loader{}).Load([]string{"-"}); err == nil || err.Error() != "-: no standard input" {
		t.Errorf("no stdin: %v", err)
	}
}

// Kinds the kubelet does not read are skipped with a warning; comment-only
// documents are skipped silently but still counted.
func TestLoadSkips(t *testing.T) {
	var warnings []string
	l := &Loader{Stdin: strings.NewReader("# just a comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n" + pvDoc),
		Warn: func(s string) { warnings = append(warnings, s) }}
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-: document 2: skipping apps/v1 Deployment (the kubelet simulation does not read this kind)"}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}
	if got := c.SourceOf("PersistentVolume", "", "pv-1").Doc; got != 3 {
		t.Errorf("PV document = %d, want 3", got)
	}
}

// Empty documents, as helm template writes them for templates that render
// nothing, are skipped wherever they are: first, between two "---", last.
func TestLoadEmptyDocuments(t *testing.T) {
	for _, in := range []string{
		"---\n# c\n---\n" + pvDoc,
		"---\n---\n" + pvDoc,
		pvDoc + "\n---\n---\n",
		"---\n" + pvDoc + "\n---\n...\n",
	} {
		c, err := (&Loader{Stdin: strings.NewReader(in)}).Load([]string{"-"})
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if _, ok := c.PersistentVolume("pv-1"); !ok {
			t.Errorf("%q: the PV was not read", in)
		}
	}
}

// Errors name the file and document, and the field path where there is one.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings; the first is matched as a prefix after the file name
	}{
		{"unknown field", driverDoc + "\n---\napiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: {podInfoOnMounts: true}",
			[]string{": document 2: ", `unknown field "spec.podInfoOnMounts"`}},
		{"unknown nested field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  volumes: [{name: v, csi: {driver: d, readonly: true}}]",
			[]string{": document 1: ", `unknown field "spec.volumes[0].csi.readonly"`}},
		{"bad YAML", pvDoc + "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: [\n",
			[]string{": document 2: ", "yaml"}},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}", []string{": document 1: line 1: kind: Required value"}},
		{"no apiVersion", "kind: Pod\nmetadata: {name: x}", []string{": document 1: line 1: apiVersion: Required value"}},
		{"wrong apiVersion", "apiVersion: storage.k8s.io/v1beta1\nkind: CSIDriver\nmetadata: {name: x}",
			[]string{`: document 1: line 1: apiVersion: Unsupported value: "storage.k8s.io/v1beta1": CSIDriver is read as storage.k8s.io/v1`}},
		{"duplicate object", driverDoc + "\n---\n" + driverDoc,
			[]string{": document 2: line 8: CSIDriver hostpath.csi.k8s.io already defined at ", "m.yaml: document 1"}},
		{"duplicate in a List", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(pvDoc, "\n", "\n  ") + "\n- " + strings.ReplaceAll(pvDoc, "\n", "\n  "),
			[]string{": document 1, items[1]: line 13: PersistentVolume pv-1 already defined at ", "m.yaml: document 1, items[0]"}},
		{"unknown field in a List item", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}, strinData: {}}",
			[]string{": document 1, items[0]: ", `unknown field "strinData"`}},
		{"no name", "apiVersion: v1\nkind: Secret\nmetadata: {namespace: x}", []string{": document 1: line 3: metadata.name: Required value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, t.TempDir(), "m.yaml", tc.content)
			_, err := (&Loader{}).Load([]string{f})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), f+tc.want[0]) {
				t.Errorf("error %q does not start with %q", err, f+tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadPathErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := (&Loader{}).Load([]string{dir}); err == nil || err.Error() != dir+": no .yaml, .yml or .json files in the directory" {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := (&Loader{}).Load([]string{dir + "/missing.yaml"}); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// Duplicate fields are errors, as with the API server's strict field
// validation.
func TestLoadDuplicateField(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/dup.yaml"
	doc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  name: t\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&Loader{}).Load([]string{p})
	if err == nil || !strings.Contains(err.Error(), "document 1") || !strings.Contains(err.Error(), `"name" already set`) {
		t.Fatalf("err = %v, want a duplicate-field error naming document 1", err)
	}
}

// A gated CSIDriver field the release's API server drops is dropped with a
// warning naming it, not silently: the user set it and would otherwise see
// the kubelet ignore it.
func TestLoadWarnsDroppedFields(t *testing.T) {
	doc := "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d.example.com}\n" +
		"spec: {tokenRequests: [{audience: a}], serviceAccountTokenInSecrets: true, seLinuxMount: true}"
	var warnings []string
	var def Defaults
	def.Dropped.ServiceAccountTokenInSecrets = true
	c, err := (&Loader{Stdin: strings.NewReader(doc), Defaults: def, Warn: func(s string) { warnings = append(warnings, s) }}).Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "-: document 1: CSIDriver d.example.com: spec.serviceAccountTokenInSecrets is set, but the API server of this release drops it") {
		t.Errorf("warnings = %q, want one about spec.serviceAccountTokenInSecrets", warnings)
	}
	d, _ := c.CSIDriver("d.example.com")
	if d.Spec.ServiceAccountTokenInSecrets != nil || d.Spec.SELinuxMount == nil || !*d.Spec.SELinuxMount {
		t.Errorf("after the API server: serviceAccountTokenInSecrets %v (want dropped), seLinuxMount %v (want kept)", d.Spec.ServiceAccountTokenInSecrets, d.Spec.SELinuxMount)
	}
}

// A namespace on a cluster-scoped object is cleared, as the API server
// clears it on create, so lookups by name still find the object.
func TestLoadClusterScopedNamespace(t *testing.T) {
	doc := "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d.example.com, namespace: kube-system}\n---\n" +
		"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-1, namespace: default}\nspec: {csi: {driver: d.example.com, volumeHandle: h}}\n"
	c, err := (&Loader{Stdin: strings.NewReader(doc)}).Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := c.CSIDriver("d.example.com"); !ok || d.Namespace != "" {
		t.Errorf("CSIDriver: found %v, namespace %q; want found, no namespace", ok, d.Namespace)
	}
	if pv, ok := c.PersistentVolume("pv-1"); !ok || pv.Namespace != "" {
		t.Errorf("PV: found %v, namespace %q; want found, no namespace", ok, pv.Namespace)
	}
}

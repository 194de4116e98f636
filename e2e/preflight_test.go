package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// The pre-flight (issue 23): one `validate` run reports every problem of
// every file, each at its file, document and line, and exits 2; `plan`
// refuses the same input with every problem the loader finds, at once.

// preflightFiles are manifests with ten planted problems of different
// kinds; each want names the file, document, line and what the finding
// says.
type planted struct {
	file, doc string
	line      int
	object    string
	contains  string
}

func preflightInput(t *testing.T, work string) (files map[string]string, want []planted) {
	t.Helper()
	files = map[string]string{
		"drivers.yaml": `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ` + refDriverName + `
spec:
  attachRequired: false
  podInfoOnMout: true
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: other.example.com
spec:
  fsGroupPolicy: Sometimes
`,
		"volumes.yaml": `apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi:
    driver: ` + refDriverName + `
    volumeHandle: vol-1
    nodePublishSecretRef: {name: publish-secret, namespace: default}
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-2
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi:
    driver: ` + refDriverName + `
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  volumeName: pv-missing
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`,
		"pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  serviceAccountName: builder
  containers: [{name: c, image: busybox}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
  - name: cache
    persistentVolumeClaim: {claimName: cache}
  - name: inline
    csi:
      driver: nobody.example.com
      volumeAtributes: {a: b}
  - name: data
    emptyDir: {}
`,
		// An indentation error: go-yaml names line 6, the loader line 7.
		"secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: s
  namespace: default
  labels: {a: b}
 stringData:
  a: b
`,
	}
	for name, content := range files {
		files[name] = writeFile(t, work, name, content)
	}
	d := func(name string) string { return files[name] }
	want = []planted{
		{d("drivers.yaml"), ": document 1", 7, "CSIDriver " + refDriverName, `unknown field "spec.podInfoOnMout" (did you mean "spec.podInfoOnMount"?)`},
		{d("drivers.yaml"), ": document 2", 15, "CSIDriver other.example.com", `spec.fsGroupPolicy: Unsupported value: "Sometimes"`},
		{d("pod.yaml"), ": document 1", 17, "Pod default/web", `unknown field "spec.volumes[2].csi.volumeAtributes" (did you mean "spec.volumes[2].csi.volumeAttributes"?)`},
		{d("pod.yaml"), ": document 1", 18, "Pod default/web", `spec.volumes[3].name: Duplicate value: "data"`},
		{d("pod.yaml"), ": document 1", 13, "Pod default/web", "spec.volumes[1].persistentVolumeClaim.claimName: PersistentVolumeClaim default/cache not found"},
		{d("pod.yaml"), ": document 1", 16, "Pod default/web", `spec.volumes[2].csi.driver: no CSIDriver named "nobody.example.com"`},
		{d("pod.yaml"), ": document 1", 7, "Pod default/web", "spec.serviceAccountName: ServiceAccount default/builder not found"},
		{d("volumes.yaml"), ": document 1", 11, "PersistentVolume pv-1", "spec.csi.nodePublishSecretRef: Secret default/publish-secret not found"},
		{d("volumes.yaml"), ": document 2", 20, "PersistentVolume pv-2", "spec.csi.volumeHandle: Required value"},
		{d("volumes.yaml"), ": document 3", 29, "PersistentVolumeClaim default/data", `spec.volumeName: PersistentVolume "pv-missing" not found`},
		{d("secret.yaml"), ": document 1", 7, "", "yaml: did not find expected key"},
	}
	return files, want
}

// TestPreflightTenProblems: eleven problems of ten kinds in four files
// (unknown fields with a did-you-mean, invalid CSIDriver, PV and Pod
// fields, missing Secret, claim, PersistentVolume, ServiceAccount and
// CSIDriver, a YAML indentation error): all reported by one run, each at
// its line, with exit 2 and one line on stderr.
func TestPreflightTenProblems(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	_, want := preflightInput(t, work)
	r := runValidateBoth(t, "-R", "-f", work)
	wantCode(t, r.JSON, 2)
	for _, w := range want {
		found := false
		for _, f := range r.Findings {
			if f.Severity == "error" && f.Source == w.file+w.doc && f.Line == w.line && f.Object == w.object && strings.Contains(f.Message, w.contains) {
				found = true
			}
		}
		if !found {
			t.Errorf("not reported: ERROR %s%s: line %d: %s: %s", w.file, w.doc, w.line, w.object, w.contains)
		}
	}
	if n := countSeverity(r.Findings, "error"); n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), r.Text.Stdout)
	}
	oneLineError(t, r.Text, fmt.Sprintf("%d invalid field(s) or missing object(s)", len(want)))
	// An object with errors gets no "valid" line.
	for _, f := range r.Findings {
		if f.Severity == "info" && f.Object == "CSIDriver "+refDriverName {
			t.Errorf("a CSIDriver with an unknown field is called valid: %+v", f)
		}
	}
}

// TestPreflightPlanAllAtOnce: `plan` refuses the same input with every
// problem the loader finds (syntax, unknown fields, invalid fields) and the
// missing objects that the objects it could read name, each on a line of
// its own, and exit 2.
func TestPreflightPlanAllAtOnce(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	files, _ := preflightInput(t, work)
	r := runSim(t, "plan", "-f", work)
	wantCode(t, r, 2)
	for _, w := range []string{
		files["secret.yaml"] + ": document 1: line 7: yaml: did not find expected key",
		files["drivers.yaml"] + `: document 1: line 7: unknown field "spec.podInfoOnMout" (did you mean "spec.podInfoOnMount"?)`,
		files["drivers.yaml"] + `: document 2: line 15: spec.fsGroupPolicy: Unsupported value: "Sometimes"`,
		files["pod.yaml"] + `: document 1: line 18: spec.volumes[3].name: Duplicate value: "data"`,
		files["volumes.yaml"] + ": document 2: line 20: spec.csi.volumeHandle: Required value",
		// And what the objects read name that the input does not hold.
		files["volumes.yaml"] + ": document 1: line 11: spec.csi.nodePublishSecretRef: Secret default/publish-secret not found",
	} {
		if !strings.Contains(r.Stderr, "\n  "+w) {
			t.Errorf("stderr does not list %q\n%s", w, r)
		}
	}
	if !strings.HasPrefix(r.Stderr, "csi-kubelet-sim: ") || !strings.Contains(r.Stderr, " problems in the input:\n") {
		t.Errorf("stderr should start with the count of problems\n%s", r)
	}
}

// TestPreflightEndpoint: with --endpoint, a pod whose volume is of a
// driver other than the live one is a mismatch at the volume's line.
func TestPreflightEndpoint(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	f := writeFile(t, work, "in.yaml", csiDriverNamed(refDriverName, "  attachRequired: false\n  volumeLifecycleModes: [Ephemeral]\n")+"---\n"+
		"apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: other.example.com}\nspec: {volumeLifecycleModes: [Ephemeral]}\n---\n"+
		inlinePodDoc("p", refDriverName, "other.example.com"))
	r := runValidateBoth(t, "-f", f, "--endpoint", "unix://"+drv.Sock)
	wantCode(t, r.JSON, 1)
	var got []vFinding
	for _, fd := range r.Findings {
		if fd.Severity == "mismatch" {
			got = append(got, fd)
		}
	}
	// inlinePodDoc: the third volume (inline-1) is on line 13 of the pod,
	// which starts on line 14 of the file.
	if len(got) != 1 || got[0].Object != "Pod ns/p" || got[0].Line != 26 ||
		!strings.Contains(got[0].Message, `spec.volumes[2]: volume inline-1 is of driver "other.example.com", but the driver on `+drv.Sock+` registers as "`+refDriverName+`"`) {
		t.Errorf("mismatches %+v, want one for spec.volumes[2] at line 26\n%s", got, r.Text.Stdout)
	}
}

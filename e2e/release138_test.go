package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Kubernetes 1.38 (the pre-release v1.38.0-beta.0): at default gates the
// driver gets the same requests as at 1.37 (docs/kubelet.md §19), the
// header and the summary say it is a pre-release, and a gate removed at
// 1.38 is refused by name there (exit 2, one line) and accepted at 1.37.
// provisionerIdentity is the volume_context key external-provisioner
// puts its identity in, with its value.
var provisionerIdentity = regexp.MustCompile(`("storage.kubernetes.io/csiProvisionerIdentity":")[^"]*"`)

func TestRelease138SameRequestsAs137(t *testing.T) {
	work := workDir(t)
	requests := func(version string) ([]string, simResult) {
		root := filepath.Join(work, "root-"+version)
		r := runSim(t, "plan", "--driver-name", "ref.csi.kubelet-sim.io", "--kubelet-version", version,
			"--root-dir", root, "--pod-uid", "c0ffee00-1111-4222-8333-444455556666", "--node-name", "n1", "-o", "json")
		wantCode(t, r, 0)
		var out []string
		for _, c := range calls(parseTrace(t, r)) {
			b, err := json.Marshal(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			// The provisioner's identity is its start time and a random
			// number: one per run, whatever the release.
			req := provisionerIdentity.ReplaceAllString(strings.ReplaceAll(string(b), root, "<root>"), `$1<identity>"`)
			out = append(out, c.Method+" "+req)
		}
		return out, r
	}
	r37, _ := requests("1.37")
	r38, res := requests("v1.38.0-beta.0")
	if len(r37) == 0 || !reflect.DeepEqual(r37, r38) {
		t.Errorf("1.38's requests differ from 1.37's:\n1.37 %q\n1.38 %q", r37, r38)
	}
	s := summary(t, parseTrace(t, res))
	if !strings.Contains(s.Raw, `"kubelet_pre_release":"v1.38.0-beta.0"`) || !strings.Contains(s.Raw, `"kubelet_version":"1.38"`) {
		t.Errorf("summary %s", s.Raw)
	}
	text := runSim(t, "plan", "--driver-name", "ref.csi.kubelet-sim.io", "--kubelet-version", "1.38")
	if !strings.Contains(text.Stdout, "kubelet 1.38 (pre-release: v1.38.0-beta.0)") {
		t.Errorf("the header does not mark the pre-release:\n%s", text)
	}
	for _, g := range []string{"RecoverVolumeExpansionFailure", "ServiceAccountTokenJTI", "ServiceAccountTokenPodNodeInfo",
		"ServiceAccountTokenNodeBinding", "ServiceAccountTokenNodeBindingValidation"} {
		ok := runSim(t, "plan", "--driver-name", "d.example.com", "--kubelet-version", "1.37", "--feature-gates", g+"=true")
		wantCode(t, ok, 0)
		refused := runSim(t, "plan", "--driver-name", "d.example.com", "--kubelet-version", "1.38", "--feature-gates", g+"=true")
		wantCode(t, refused, 2)
		oneLineError(t, refused, "unrecognized feature gate: "+g+" (kubelet 1.38: removed in 1.38")
	}
}

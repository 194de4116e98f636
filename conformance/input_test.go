package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// The tokens conformance's kubelet sends carry the UIDs of the input's
// ServiceAccount and Node, as `run`'s do: each scenario's token source
// reads the scenario's objects (issue 17: it read an empty cluster, and
// the tokens had the simulator's own node UID and no ServiceAccount UID).
func TestRunTokensSeeInput(t *testing.T) {
	_, ep, root := startTestDriver(t, bugs{})
	conn := &csiclient.Dialer{Endpoint: ep}
	ctx := context.Background()
	info, err := Probe(ctx, &csiclient.Recorder{Next: conn, Trace: csiclient.NewTrace()}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	obj := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.AttachRequired = ptr(false)
		s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
	})
	obj.Name = info.Name
	in, err := (&manifests.Loader{Stdin: strings.NewReader(`apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: default, uid: 0b0b0b0b-1111-2222-3333-444444444444}
---
apiVersion: v1
kind: Node
metadata: {name: node-1, uid: 0c0c0c0c-1111-2222-3333-444444444444}
`)}).Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(ctx, Config{
		Conn: conn, CSIDriver: obj, Focus: regexp.MustCompile("^tokens/volume-context$"),
		Timeout: 20 * time.Second, Release: node.DefaultRelease(), RootDir: root, NodeName: "node-1", Input: in,
	}, info, nil)
	if len(rep.Results) != 1 || rep.Results[0].Status != Pass {
		t.Fatalf("results %+v", rep.Results)
	}
	var claims struct {
		K8s struct {
			ServiceAccount struct{ UID string } `json:"serviceaccount"`
			Node           struct{ UID string } `json:"node"`
		} `json:"kubernetes.io"`
	}
	found := false
	for _, c := range rep.ScenarioCalls["tokens/volume-context"] {
		req, ok := c.Request.(*csi.NodePublishVolumeRequest)
		if !ok {
			continue
		}
		var toks map[string]struct{ Token string }
		if err := json.Unmarshal([]byte(req.GetVolumeContext()[csiclient.TokensKey]), &toks); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(toks["vault"].Token, ".")
		if len(parts) != 3 {
			t.Fatalf("not a JWT: %q", toks["vault"].Token)
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		found = true
	}
	if !found {
		t.Fatal("no NodePublishVolume in the scenario's calls")
	}
	if got := claims.K8s.ServiceAccount.UID; got != "0b0b0b0b-1111-2222-3333-444444444444" {
		t.Errorf("the token's ServiceAccount UID is %q, want the input's", got)
	}
	if got := claims.K8s.Node.UID; got != "0c0c0c0c-1111-2222-3333-444444444444" {
		t.Errorf("the token's Node UID is %q, want the input's", got)
	}
}

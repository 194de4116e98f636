package node

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// The claims of the tokens the driver gets follow the release: jti with
// ServiceAccountTokenJTI, the node (kubernetes.io.node) with
// ServiceAccountTokenPodNodeInfo (docs/kubelet.md §4.5), whatever command
// builds the kubelet.
func TestTokenSourceClaimsByRelease(t *testing.T) {
	tests := []struct {
		minor    int
		gates    string
		wantJTI  bool
		wantNode bool
	}{
		{30, "", true, true},
		{30, "ServiceAccountTokenJTI=false", false, true},
		{31, "ServiceAccountTokenPodNodeInfo=false", true, false},
		{31, "ServiceAccountTokenJTI=false,ServiceAccountTokenPodNodeInfo=false", false, false},
		{32, "", true, true},
		{37, "", true, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("1.%d %s", tc.minor, tc.gates), func(t *testing.T) {
			e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault}]"), pv1, pvc1, pod1), newFakeDriver(),
				withGates(t, tc.minor, tc.gates))
			src := csiplugin.NewTokenSource(e.k.vm.Release, e.cluster, csiplugin.TokenOptions{NodeName: testNode})
			e.k.vm.Tokens = src
			e.mountOK("app-1")
			raw := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetVolumeContext()["csi.storage.k8s.io/serviceAccount.tokens"]
			var toks map[string]struct{ Token string }
			if err := json.Unmarshal([]byte(raw), &toks); err != nil {
				t.Fatalf("tokens %q: %v", raw, err)
			}
			claims := jwtClaims(t, toks["vault"].Token)
			if _, ok := claims["jti"]; ok != tc.wantJTI {
				t.Errorf("jti present %t, want %t: %v", ok, tc.wantJTI, claims)
			}
			k8s, _ := claims["kubernetes.io"].(map[string]any)
			node, ok := k8s["node"].(map[string]any)
			if ok != tc.wantNode || (ok && node["name"] != testNode) {
				t.Errorf("kubernetes.io.node %v, want present %t (name %s)", k8s["node"], tc.wantNode, testNode)
			}
			if pod, _ := k8s["pod"].(map[string]any); pod["name"] != "app-1" || pod["uid"] != "pod-uid-1" {
				t.Errorf("kubernetes.io.pod %v, want app-1 pod-uid-1", k8s["pod"])
			}
			if iss, err := src.Issuer(); err != nil || iss == nil {
				t.Errorf("Issuer: %v, %v", iss, err)
			}
		})
	}
}

// jwtClaims decodes a JWT's payload without checking the signature (the
// tokens package's tests do that).
func jwtClaims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A TokenRequest whose metadata.uid is not its ServiceAccount's: the API
// server of 1.30 to 1.33 wipes the UID and checks nothing; from 1.34 it is
// refused with TokenRequestServiceAccountUIDValidation (beta, on) and only
// warned about with the gate off (docs/kubelet.md §4.2). The rule is the
// release's, at its boundaries.
func TestTokenRequestUIDByRelease(t *testing.T) {
	tests := []struct {
		minor    int
		gates    string
		want     tokens.RequestUID
		conflict bool
		warning  bool
		respUID  string // metadata.uid of the response
	}{
		{30, "", tokens.RequestUIDWiped, false, false, ""},
		{33, "", tokens.RequestUIDWiped, false, false, ""},
		{34, "", tokens.RequestUIDValidated, true, false, ""},
		{34, "TokenRequestServiceAccountUIDValidation=false", tokens.RequestUIDWarned, false, true, "other"},
		{37, "", tokens.RequestUIDValidated, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("1.%d %s", tc.minor, tc.gates), func(t *testing.T) {
			r, err := release.NewRelease(fmt.Sprintf("1.%d", tc.minor), tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.TokenRequestUID(); got != tc.want {
				t.Errorf("TokenRequestUID %v, want %v", got, tc.want)
			}
			var warnings []string
			c := loadManifests(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: app-sa, namespace: default, uid: 5a000000-0000-4000-8000-000000000001}")
			src := csiplugin.NewTokenSource(r, c, csiplugin.TokenOptions{NodeName: testNode, Warn: func(w string) { warnings = append(warnings, w) }})
			req := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "other"}}
			resp, err := src.Token(context.Background(), "default", "app-sa", req)
			if tc.conflict {
				if !apierrors.IsConflict(err) {
					t.Fatalf("error %v, want a Conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v, want a token", err)
			}
			if string(resp.UID) != tc.respUID {
				t.Errorf("response uid %q, want %q", resp.UID, tc.respUID)
			}
			if (len(warnings) > 0) != tc.warning {
				t.Errorf("warnings %q, want some: %t", warnings, tc.warning)
			}
			sa, _ := jwtClaims(t, resp.Status.Token)["kubernetes.io"].(map[string]any)["serviceaccount"].(map[string]any)
			if sa["uid"] != "5a000000-0000-4000-8000-000000000001" {
				t.Errorf("serviceaccount claim %v, want the ServiceAccount's UID", sa)
			}
		})
	}
}

// The simulator's node has a UID even without a Node object in the input,
// so that tokens carry kubernetes.io.node {name, uid} as a real API server
// writes it for a kubelet's pods (pkg/serviceaccount/claims.go; docs/kubelet.md
// §4.5): derived from the node's name, the same on every run; the Node
// object's when there is one. The trace says which, with -v.
func TestTokensCarryNodeUID(t *testing.T) {
	// StableUID("Node", "", "node-1") written out:
	// sha256("csi-kubelet-sim/Node//node-1"), version and variant bits set.
	sum := sha256.Sum256([]byte("csi-kubelet-sim/Node//" + testNode))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	derived := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	const objectUID = "0d0e0000-0000-4000-8000-00000000000a"
	nodeDoc := "apiVersion: v1\nkind: Node\nmetadata: {name: " + testNode + ", uid: " + objectUID + "}"
	otherPod := strings.Replace(podDoc("app-2", "pod-uid-2", claimVol("data", "data-2")), "nodeName: node-1", "nodeName: node-2", 1)
	tests := []struct {
		name, extra, pod, wantUID, wantStep string
	}{
		{"no Node object", "", "app-1", derived, "the simulator's own, derived from the node name"},
		{"the Node object", nodeDoc, "app-1", objectUID, "the Node object's"},
		{"a pod of another node, no object: name only", "", "app-2", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := docs(csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault}]"), pv1, pvc1, pod1,
				pvDoc("pv-2", "vol-2", "data-2"), pvcDoc("data-2", "pv-2"), otherPod)
			if tc.extra != "" {
				m = docs(m, tc.extra)
			}
			e := newUnregisteredEnv(t, m, newFakeDriver())
			if _, err := e.k.vm.Register(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.k.vm.Tokens = csiplugin.NewTokenSource(e.k.vm.Release, e.cluster, csiplugin.TokenOptions{NodeName: testNode})
			e.drv.ClearCalls()
			e.mountOK(tc.pod)
			raw := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetVolumeContext()["csi.storage.k8s.io/serviceAccount.tokens"]
			var toks map[string]struct{ Token string }
			if err := json.Unmarshal([]byte(raw), &toks); err != nil {
				t.Fatalf("tokens %q: %v", raw, err)
			}
			node, _ := jwtClaims(t, toks["vault"].Token)["kubernetes.io"].(map[string]any)["node"].(map[string]any)
			if uid, _ := node["uid"].(string); uid != tc.wantUID {
				t.Errorf("kubernetes.io.node %v, want uid %q", node, tc.wantUID)
			}
			if tc.wantStep == "" {
				return
			}
			steps := strings.Join(e.steps(false), "\n")
			if !strings.Contains(steps, fmt.Sprintf("Node %q, uid %s: %s", testNode, tc.wantUID, tc.wantStep)) {
				t.Errorf("the trace does not give the node's uid %s (%s):\n%s", tc.wantUID, tc.wantStep, steps)
			}
		})
	}
}

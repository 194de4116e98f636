package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// The CSINode the kubelet writes when a driver registers is owned by its
// Node: up to 1.37 by the UID the kubelet learnt on start, from 1.38 by
// the live Node's, read with one more GET just before (docs/kubelet.md
// §13). Here the Node was created again since the start: 1.38 names the
// new UID, 1.37 the old one.
func TestCSINodeOwnerByRelease(t *testing.T) {
	for _, minor := range []int{37, 38} {
		var mu sync.Mutex
		var reqs []string
		var written storagev1.CSINode
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, r.Method+" "+r.URL.Path)
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/n1":
				_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","uid":"uid-now"}}`)
			case r.Method == http.MethodPost && r.URL.Path == "/apis/storage.k8s.io/v1/csinodes":
				_ = json.NewDecoder(r.Body).Decode(&written)
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, `{}`)
			default:
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, `{}`)
			}
		}))
		cp := &ControlPlane{kubelet: &client{base: srv.URL, hc: srv.Client(), warnings: &Warnings{}}}
		v := node.Version{Minor: minor}
		ns := &NodeSide{CP: cp, NodeName: "n1", StartNodeUID: "uid-at-start", OwnerFromLiveNode: v.CSINodeOwnerFromLiveNode()}
		reg := &node.Registration{DriverName: "d", NodeID: "n1", CSINodeDriver: storagev1.CSINodeDriver{Name: "d", NodeID: "n1"}}
		err := ns.Prepare(context.Background(), reg, nil)
		srv.Close()
		if err != nil {
			t.Fatalf("1.%d: %v", minor, err)
		}
		wantReqs := []string{"POST /apis/storage.k8s.io/v1/csinodes"}
		wantUID := types.UID("uid-at-start")
		if minor >= 38 {
			wantReqs = append([]string{"GET /api/v1/nodes/n1"}, wantReqs...)
			wantUID = "uid-now"
		}
		if !reflect.DeepEqual(reqs, wantReqs) {
			t.Errorf("1.%d: requests %v, want %v", minor, reqs, wantReqs)
		}
		if o := written.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].Name != "n1" || o[0].UID != wantUID || o[0].APIVersion != "v1" {
			t.Errorf("1.%d: CSINode owners %+v, want Node n1 %s", minor, o, wantUID)
		}
	}
}

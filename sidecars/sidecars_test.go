package sidecars

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

const (
	testDriver = "fake.csi.example.com"
	testUID    = "11111111-2222-4333-8444-555555555555"
)

func load(t *testing.T, docs ...string) *manifests.Cluster {
	t.Helper()
	l := &manifests.Loader{Stdin: strings.NewReader(strings.Join(docs, "---\n"))}
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func class(extra string) string {
	return "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: " + testDriver + "\n" + extra
}

const claimDoc = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ns1, uid: ` + testUID + `}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce, ReadOnlyMany]
  resources: {requests: {storage: 2Gi}}
`

var claimRWO = strings.Replace(claimDoc, "[ReadWriteOnce, ReadOnlyMany]", "[ReadWriteOnce]", 1)

const podDoc = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns1}
spec:
  nodeName: n1
  containers: [{name: c, image: i}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]
`

// fakeDriver is a csifake driver with a controller: CREATE_DELETE_VOLUME
// and the given further capabilities.
func fakeDriver(more ...csi.ControllerServiceCapability_RPC_Type) *csifake.Driver {
	d := csifake.New(csifake.Config{Name: testDriver, NodeID: "node-1",
		PluginCapabilities: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE, csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS}})
	caps := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range append([]csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}, more...) {
		caps.Capabilities = append(caps.Capabilities, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	d.SetResponse("ControllerGetCapabilities", caps)
	d.SetResponse("CreateVolume", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-7", CapacityBytes: 3 << 30, VolumeContext: map[string]string{"k": "v"},
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{"zone": "b", "rack": "r1"}}}}})
	d.SetResponse("DeleteVolume", &csi.DeleteVolumeResponse{})
	d.SetResponse("ControllerPublishVolume", &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"device": "/dev/x"}})
	d.SetResponse("ControllerUnpublishVolume", &csi.ControllerUnpublishVolumeResponse{})
	return d
}

func testRegistration() *node.Registration {
	return &node.Registration{DriverName: testDriver, NodeID: "node-1", Topology: map[string]string{"zone": "b", "rack": "r1"},
		NodeLabels: map[string]string{"zone": "b", "rack": "r1"}}
}

func newControllers(t *testing.T, c *manifests.Cluster, d *csifake.Driver, mod func(*Config)) (*Controllers, string) {
	t.Helper()
	root := t.TempDir()
	cfg := Config{Cluster: c, Conn: d, Trace: csiclient.NewTrace(), RootDir: root, NodeName: "n1", HoldersDir: filepath.Join(t.TempDir(), "volumes")}
	if mod != nil {
		mod(&cfg)
	}
	return New(cfg), root
}

func request(t *testing.T, d *csifake.Driver, method string) proto.Message {
	t.Helper()
	cs := d.CallsOf(method)
	if len(cs) == 0 {
		t.Fatalf("no %s call", method)
	}
	return cs[0].Request
}

func equalProto(t *testing.T, what string, got proto.Message, wantJSON string, want proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal([]byte(wantJSON), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, protojson.Format(got), protojson.Format(want))
	}
}

// The CreateVolume request: one capability per access mode, the fsType and
// mount options, the parameters without the provisioner's own keys, the
// --extra-create-metadata keys, the provisioner secret resolved from its
// templates, and the allowed topologies as requisite, rotated to the
// selected node for WaitForFirstConsumer.
func TestProvisionRequest(t *testing.T) {
	c := load(t, class(`parameters:
  csi.storage.k8s.io/fstype: xfs
  csi.storage.k8s.io/provisioner-secret-name: ${pvc.name}-${pvc.namespace}
  csi.storage.k8s.io/provisioner-secret-namespace: ${pvc.namespace}
  csi.storage.k8s.io/node-publish-secret-name: pub-${pv.name}
  csi.storage.k8s.io/node-publish-secret-namespace: sec
  type: gold
mountOptions: [ro, sync]
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions:
      - {key: zone, values: [c, b, a]}
`), claimDoc, podDoc, "apiVersion: v1\nkind: Secret\nmetadata: {name: data-ns1, namespace: ns1}\nstringData: {pw: s3cret}\n")
	d := fakeDriver(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	ctl, _ := newControllers(t, c, d, func(cfg *Config) { cfg.ExtraCreateMetadata = true })
	pod, _ := c.Pod("ns1", "p")
	reg := testRegistration()
	reg.NodeLabels = map[string]string{"zone": "b"}
	reg.CSINodeDriver.TopologyKeys = []string{"zone"}
	if err := ctl.Prepare(context.Background(), reg, []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	equalProto(t, "CreateVolume", request(t, d, "CreateVolume"), `{
	  "name": "pvc-`+testUID+`",
	  "capacityRange": {"requiredBytes": "2147483648"},
	  "volumeCapabilities": [
	    {"mount": {"fsType": "xfs", "mountFlags": ["ro", "sync"]}, "accessMode": {"mode": "SINGLE_NODE_MULTI_WRITER"}},
	    {"mount": {"fsType": "xfs", "mountFlags": ["ro", "sync"]}, "accessMode": {"mode": "MULTI_NODE_READER_ONLY"}}
	  ],
	  "parameters": {"type": "gold", "csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "ns1", "csi.storage.k8s.io/pv/name": "pvc-`+testUID+`"},
	  "secrets": {"pw": "s3cret"},
	  "accessibilityRequirements": {
	    "requisite": [{"segments": {"zone": "a"}}, {"segments": {"zone": "b"}}, {"segments": {"zone": "c"}}],
	    "preferred": [{"segments": {"zone": "b"}}, {"segments": {"zone": "c"}}, {"segments": {"zone": "a"}}]
	  }
	}`, &csi.CreateVolumeRequest{})

	claim, _ := c.PersistentVolumeClaim("ns1", "data")
	if claim.Spec.VolumeName != "pvc-"+testUID || claim.Status.Phase != corev1.ClaimBound || claim.Annotations["volume.kubernetes.io/selected-node"] != "n1" {
		t.Errorf("claim not bound as the PV controller binds it: %+v %+v", claim.Spec, claim.Status)
	}
	pv, ok := c.PersistentVolume("pvc-" + testUID)
	if !ok {
		t.Fatal("no PV in the cluster")
	}
	if got := pv.Spec.CSI.NodePublishSecretRef; got == nil || got.Name != "pub-pvc-"+testUID || got.Namespace != "sec" {
		t.Errorf("nodePublishSecretRef %+v", got)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "3Gi" {
		t.Errorf("capacity %s, want the driver's 3Gi", q.String())
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 2 || terms[0].MatchExpressions[0].Key != "rack" || terms[0].MatchExpressions[1].Values[0] != "b" {
		t.Errorf("nodeAffinity %+v", terms)
	}
	if pv.Spec.CSI.VolumeAttributes["k"] != "v" || pv.Spec.CSI.FSType != "xfs" || pv.Annotations[annDeletionSecretName] != "data-ns1" {
		t.Errorf("PV csi %+v annotations %v", pv.Spec.CSI, pv.Annotations)
	}
}

// Bad classes and claims are input errors naming the claim.
func TestProvisionInputErrors(t *testing.T) {
	cases := []struct{ name, class, want string }{
		{"unknown prefixed key", "parameters: {csi.storage.k8s.io/bogus: x}\n", `found unknown parameter key "csi.storage.k8s.io/bogus"`},
		{"two fstypes", "parameters: {fstype: ext4, csi.storage.k8s.io/fstype: xfs}\n", `fstype specified in parameters with both "fstype" and`},
		{"name without namespace", "parameters: {csi.storage.k8s.io/provisioner-secret-name: x}\n", "either name and namespace for Provisioner secrets specified"},
		{"unknown token", "parameters: {csi.storage.k8s.io/node-stage-secret-name: '${pvc.uid}', csi.storage.k8s.io/node-stage-secret-namespace: ns1}\n", `invalid tokens: ["pvc.uid"]`},
		{"token in namespace", "parameters: {csi.storage.k8s.io/node-stage-secret-name: x, csi.storage.k8s.io/node-stage-secret-namespace: '${pvc.name}'}\n", `invalid tokens: ["pvc.name"]`},
		{"missing secret", "parameters: {csi.storage.k8s.io/secret-name: nope, csi.storage.k8s.io/secret-namespace: ns1}\n", `secrets "nope" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, class(tc.class), claimDoc, podDoc)
			d := fakeDriver()
			ctl, _ := newControllers(t, c, d, nil)
			pod, _ := c.Pod("ns1", "p")
			err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod})
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "claim ns1/data") {
				t.Fatalf("error %v, want an input error naming claim ns1/data with %q", err, tc.want)
			}
			if n := len(d.CallsOf("CreateVolume")); n != 0 {
				t.Errorf("%d CreateVolume calls for bad input", n)
			}
		})
	}
}

// csiAccessMode is the sidecars' mapping, with and without
// SINGLE_NODE_MULTI_WRITER.
func TestAccessModes(t *testing.T) {
	m := func(s ...corev1.PersistentVolumeAccessMode) []corev1.PersistentVolumeAccessMode { return s }
	cases := []struct {
		modes      []corev1.PersistentVolumeAccessMode
		snmw       bool
		want       csi.VolumeCapability_AccessMode_Mode
		wantErrSub string
	}{
		{m(corev1.ReadWriteOnce), false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, ""},
		{m(corev1.ReadWriteOnce), true, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, ""},
		{m(corev1.ReadWriteOncePod), false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, ""},
		{m(corev1.ReadWriteOncePod), true, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, ""},
		{m(corev1.ReadOnlyMany), false, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, ""},
		{m(corev1.ReadWriteMany, corev1.ReadWriteOnce), false, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, ""},
		{m(corev1.ReadOnlyMany, corev1.ReadWriteOnce), false, 0, "ReadOnlyMany and ReadWriteOnce"},
		{m(corev1.ReadWriteOncePod, corev1.ReadWriteOnce), true, 0, "ReadWriteOncePod with other access modes"},
	}
	for _, tc := range cases {
		got, err := csiAccessMode(tc.modes, tc.snmw)
		if tc.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
				t.Errorf("%v: error %v, want %q", tc.modes, err, tc.wantErrSub)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v snmw=%v: %v %v, want %v", tc.modes, tc.snmw, got, err, tc.want)
		}
	}
}

// For Immediate binding the preferred topologies are rotated by a hash
// of the claim's name; a StatefulSet-like name <claim>-<set>-<n> is offset
// by n, so that consecutive members start at consecutive topologies.
func TestImmediatePreferredRotation(t *testing.T) {
	first := func(name string) string {
		sc := load(t, class("allowedTopologies: [{matchLabelExpressions: [{key: zone, values: [a, b, c]}]}]\n"))
		cls, _ := sc.StorageClass("fast")
		ctl := &Controllers{reg: testRegistration()}
		req, err := ctl.accessibilityRequirements(&corev1.PersistentVolumeClaim{ObjectMeta: metaName(name)}, cls, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Requisite) != 3 || len(req.Preferred) != 3 {
			t.Fatalf("requirements %v", req)
		}
		return req.Preferred[0].Segments["zone"]
	}
	seen := map[string]bool{}
	for _, n := range []string{"www-web-0", "www-web-1", "www-web-2"} {
		seen[first(n)] = true
	}
	if len(seen) != 3 {
		t.Errorf("members 0, 1, 2 of a set start at %v, want three different topologies", seen)
	}
	if first("www-web-0") != first("other-web-0") {
		t.Errorf("claims of the same set member should start at the same topology")
	}
}

// A run killed after CreateVolume and ControllerPublishVolume leaves a
// record; Cleanup unpublishes and deletes from it, then removes it. A
// CreateVolume that never answered is asked again for its handle.
func TestRecordAndCleanup(t *testing.T) {
	c := load(t, class(""), claimRWO, podDoc)
	d := fakeDriver(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	ctl, root := newControllers(t, c, d, nil)
	pod, _ := c.Pod("ns1", "p")
	if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	va, ok := c.VolumeAttachment(node.AttachmentName("vol-7", testDriver, "n1"))
	if !ok || !va.Status.Attached || va.Status.AttachmentMetadata["device"] != "/dev/x" {
		t.Fatalf("VolumeAttachment %+v", va)
	}
	// A second record: a CreateVolume that was about to be called.
	p := filepath.Join(root, recordDir, "sidecars-zz"+recordSuffix)
	r := &record{path: p}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	if err := r.write(entry{Kind: kindCreating, Name: "pvc-x", Request: requestJSON(&csi.CreateVolumeRequest{Name: "pvc-x", Secrets: map[string]string{"pw": "never on disk"}})}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "never on disk") {
		t.Errorf("a secret went to the record: %s", b)
	}
	if err := CheckRoot(root); err == nil {
		t.Error("CheckRoot accepts a root dir with records")
	}
	d.ClearCalls()
	if errs := Cleanup(context.Background(), CleanupConfig{RootDir: root, Conn: d, Trace: csiclient.NewTrace(), HoldersDir: filepath.Join(t.TempDir(), "volumes")}); len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, call := range d.Calls() {
		got = append(got, call.Method)
	}
	if strings.Join(got, ",") != "GetPluginInfo,ControllerUnpublishVolume,DeleteVolume,CreateVolume,DeleteVolume" {
		t.Errorf("cleanup calls %v", got)
	}
	if rs, _ := Records(root); len(rs) > 0 {
		t.Errorf("records left: %v", rs)
	}
}

// A volume the kubelet still uses is neither detached nor deleted, and a
// refused DeleteVolume names the handle left; the record stays for
// `cleanup`.
func TestFinishLeavesWhatIsInUseOrRefused(t *testing.T) {
	c := load(t, class(""), claimRWO, podDoc)
	d := fakeDriver(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	ctl, root := newControllers(t, c, d, func(cfg *Config) { cfg.Endpoint = "/run/csi.sock" })
	pod, _ := c.Pod("ns1", "p")
	if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	errs := ctl.Finish(context.Background(), func(string, string) bool { return true })
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "still in use") || !strings.Contains(errs[0].Error(), "handle vol-7") {
		t.Fatalf("errors %v", errs)
	}
	if n := len(d.CallsOf("ControllerUnpublishVolume")) + len(d.CallsOf("DeleteVolume")); n != 0 {
		t.Errorf("%d detach/delete calls for a volume in use", n)
	}
	d.FailNext("DeleteVolume", codes.FailedPrecondition, 1)
	errs = ctl.Finish(context.Background(), nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "FailedPrecondition") || !strings.Contains(errs[0].Error(), "handle vol-7 left") && !strings.Contains(errs[0].Error(), "handle vol-7") {
		t.Fatalf("errors %v", errs)
	}
	if !strings.Contains(errs[0].Error(), "csi-kubelet-sim cleanup --root-dir "+root+" --endpoint /run/csi.sock") {
		t.Errorf("no cleanup hint in %v", errs[0])
	}
	if rs, _ := Records(root); len(rs) != 1 {
		t.Errorf("records %v, want the run's record kept", rs)
	}
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "ns1"} }

// A CreateVolume that timed out may have made the volume: Finish asks
// again by the same name and deletes what it gets; a refused one made
// nothing and is not asked again.
func TestUnfinishedCreateVolumeSettled(t *testing.T) {
	for _, tc := range []struct {
		code      codes.Code
		wantCalls string
	}{
		{codes.DeadlineExceeded, "CreateVolume,CreateVolume,DeleteVolume"},
		{codes.OutOfRange, "CreateVolume"},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			c := load(t, class(""), claimRWO, podDoc)
			d := fakeDriver()
			ctl, root := newControllers(t, c, d, nil)
			pod, _ := c.Pod("ns1", "p")
			d.FailNext("CreateVolume", tc.code, 1)
			if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err == nil || IsInputError(err) {
				t.Fatalf("Prepare: %v, want the driver's error", err)
			}
			if errs := ctl.Finish(context.Background(), nil); len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []string
			for _, call := range d.Calls() {
				if strings.HasSuffix(call.Method, "Volume") {
					got = append(got, call.Method)
				}
			}
			if strings.Join(got, ",") != tc.wantCalls {
				t.Errorf("calls %v, want %s", got, tc.wantCalls)
			}
			if rs, _ := Records(root); len(rs) > 0 {
				t.Errorf("records left: %v", rs)
			}
		})
	}
}

// A volume smaller than the claim is deleted at once, as the provisioner
// does, and not again (nor kept) at Finish.
func TestSmallVolumeDeleted(t *testing.T) {
	c := load(t, class(""), claimRWO, podDoc)
	d := fakeDriver()
	d.SetResponse("CreateVolume", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-small", CapacityBytes: 1 << 30}})
	ctl, _ := newControllers(t, c, d, func(cfg *Config) { cfg.KeepVolumes = true })
	pod, _ := c.Pod("ns1", "p")
	err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod})
	if err == nil || !strings.Contains(err.Error(), "created volume capacity 1073741824 less than requested capacity 2147483648") {
		t.Fatalf("Prepare: %v", err)
	}
	if errs := ctl.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 1 {
		t.Errorf("%d DeleteVolume calls, want 1", n)
	}
	if v := ctl.Volumes(); len(v) != 1 || !v[0].Deleted || v[0].Kept {
		t.Errorf("volumes %+v", v)
	}
}

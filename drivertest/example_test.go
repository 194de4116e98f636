package drivertest_test

// How a driver's own tests use drivertest, against the reference driver
// started in-process. The driver records its mounts instead of making
// them (refdriver.Config.RecordMounts), so that the example passes as an
// ordinary user; TestExamplesAsOrdinaryUser runs it as one.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/drivertest"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/fixtures/refdriver"
)

// startDriver starts the reference driver on a socket of its own and
// stops it when the test ends; faults are refdriver fault specs.
func startDriver(t *testing.T, faults ...string) string {
	t.Helper()
	cfg := refdriver.DefaultConfig()
	cfg.RecordMounts, cfg.Block = true, false
	cfg.DataDir = t.TempDir()
	cfg.LogOutput = testLog{t}
	cfg.Verbosity = 1
	for _, spec := range faults {
		f, err := refdriver.ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	sock := filepath.Join(t.TempDir(), "csi.sock")
	cfg.Endpoint = "unix://" + sock
	d, err := refdriver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("driver: %v", err)
		}
	})
	waitForSocket(t, sock, served)
	return cfg.Endpoint
}

// waitForSocket waits until the driver listens, or fails t when it ended.
func waitForSocket(t *testing.T, sock string, served chan error) {
	t.Helper()
	for range 500 {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		select {
		case err := <-served:
			t.Fatalf("the driver ended before it listened: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("the driver does not listen on %s", sock)
}

// testLog sends the driver's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}

// The conformance scenarios, one subtest each: `go test -run
// 'TestExampleConformance/lifecycle/'` runs those of the lifecycle area.
func TestExampleConformance(t *testing.T) {
	var faults []string
	if f := os.Getenv(faultEnv); f != "" {
		faults = append(faults, f) // TestConformanceFails's run
	}
	drivertest.Conformance(t, drivertest.Config{
		Endpoint:   startDriver(t, faults...),
		Files:      []string{"testdata/csidriver.yaml"},
		TestDriver: "testdata/test-driver.yaml",
	})
}

// A pod run through the kubelet: the driver's own assertion on what
// NodePublishVolume got (podInfoOnMount: the pod's name and namespace).
func TestExamplePodInfo(t *testing.T) {
	res := drivertest.RunPod(t, drivertest.Config{
		Endpoint: startDriver(t),
		Files:    []string{"testdata/csidriver.yaml", "testdata/pod.yaml"},
	})
	pubs := drivertest.Requests[*csi.NodePublishVolumeRequest](res)
	if len(pubs) == 0 {
		t.Fatal("no NodePublishVolume")
	}
	for _, req := range pubs {
		ctx := req.GetVolumeContext()
		if ctx["csi.storage.k8s.io/pod.name"] != "web" || ctx["csi.storage.k8s.io/pod.namespace"] != "shop" || ctx["csi.storage.k8s.io/ephemeral"] != "true" {
			t.Errorf("NodePublishVolume volume_context %v: want pod web in shop, ephemeral", ctx)
		}
		if ctx["size"] != "small" {
			t.Errorf("NodePublishVolume volume_context %v: want the pod's volumeAttributes", ctx)
		}
	}
}

// A run the driver fails: the failed call and the exit code `run` gives.
// The CSIDriver is given as an object this time.
func TestExampleDriverFails(t *testing.T) {
	yes := true
	obj := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: refdriver.DefaultDriverName},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       new(bool),
			PodInfoOnMount:       &yes,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
		},
	}
	res := drivertest.RunPodExpectingError(t, drivertest.Config{
		Endpoint: startDriver(t, "NodePublishVolume=Internal"),
		Files:    []string{"testdata/pod.yaml"},
		Objects:  []runtime.Object{obj},
	})
	if res.ExitCode != 1 {
		t.Errorf("exit code %d, want 1 (the driver failed a call)", res.ExitCode)
	}
	failed := res.Failed()
	if len(failed) == 0 || failed[0].Method != "NodePublishVolume" {
		t.Errorf("failed calls %v, want NodePublishVolume", failed)
	}
}

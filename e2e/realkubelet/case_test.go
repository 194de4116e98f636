package realkubelet

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/callcompare"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// runCase runs the pod through the whole kubelet, then through the
// simulator, and compares the driver's two streams.
func runCase(ctx context.Context, t *testing.T, s *stack, drv *driver, c difftable.Case, sim string, startup []recorder.Call, out string) {
	begin := time.Now()
	o := loadCase(t, c)
	if err := drv.rec.SetNodeCapabilities(c.Caps); err != nil {
		t.Fatal(err)
	}
	o.create(ctx, t, s)

	mark := len(drv.rec.Calls())
	pod := s.createPod(ctx, t, o)
	d, err := drv.waitCount(ctx, mark, "NodePublishVolume", 1, 60*time.Second)
	if err != nil {
		t.Fatalf("pod %s created, no NodePublishVolume: %v\nkubelet log:\n%s", pod.Name, err, s.kubelet.tail(40))
	}
	t.Logf("pod created -> NodePublishVolume %.2fs", d.Seconds())
	started := drv.published(ctx, t, s, pod, o)

	zero := int64(0)
	deleted := time.Now()
	if err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if _, err := waitFor(ctx, nil, "teardown", 60*time.Second, drv.tornDown(mark)); err != nil {
		t.Fatalf("pod deleted: %v\nkubelet log:\n%s", err, s.kubelet.tail(40))
	}
	t.Logf("pod deleted -> teardown done %.2fs", time.Since(deleted).Seconds())
	// Nothing of the kubelet's follows the last teardown call: a short
	// quiet catches a stray call (it would land in the next case, which
	// would then differ).
	drv.settleFor(ctx, t, caseQuiet)
	wrote := s.written(ctx, t, pod, started)
	kubeletCalls := append(append([]recorder.Call{}, startup...), drv.rec.Calls()[mark:]...)
	kubeletDone := time.Since(begin)

	simCalls, report := runSimulator(ctx, t, s, c, o, sim, string(pod.UID))
	kubelet := callcompare.NormalizeAll(kubeletCalls, kubeletRoot)
	simLines := callcompare.NormalizeAll(simCalls, simRoot(s, c))
	writeStreams(t, out, c.Name, kubelet, simLines)
	t.Logf("case: whole kubelet %.1fs, with the simulator %.1fs", kubeletDone.Seconds(), time.Since(begin).Seconds())
	if strings.Join(kubelet, "\n") != strings.Join(simLines, "\n") {
		if withoutSecondEarlySync(kubelet, simLines) {
			t.Logf("the whole kubelet republished once more right after its early republish (its second early pod sync; the simulator makes one): otherwise identical")
		} else {
			t.Errorf("the whole kubelet and csi-kubelet-sim differ:\n%s", callcompare.Diff("whole kubelet", kubelet, simLines))
		}
	}
	for _, d := range compareWritten(wrote, report) {
		t.Errorf("what the whole kubelet wrote and what csi-kubelet-sim reports differ: %s", d)
	}
}

// loadCase decodes a case's manifests: a sample's file, or the table's.
func loadCase(t *testing.T, c difftable.Case) objects {
	if c.Sample != "" {
		return loadSample(t, c.Sample)
	}
	return loadObjects(t, c.Name, c.YAML)
}

// tornDown: every target published since mark is unpublished, every
// staging path staged is unstaged.
func (d *driver) tornDown(mark int) func(context.Context) error {
	return func(context.Context) error {
		open := map[string]int{}
		for _, c := range d.rec.Calls()[mark:] {
			switch c.Short() {
			case "NodePublishVolume":
				open["target "+str(c.Request["target_path"])] = 1
			case "NodeUnpublishVolume":
				delete(open, "target "+str(c.Request["target_path"]))
			case "NodeStageVolume":
				open["staging "+str(c.Request["staging_target_path"])] = 1
			case "NodeUnstageVolume":
				delete(open, "staging "+str(c.Request["staging_target_path"]))
			}
		}
		if len(open) > 0 {
			return errNotYet
		}
		return nil
	}
}

func str(v any) string { s, _ := v.(string); return s }

func simRoot(s *stack, c difftable.Case) string { return filepath.Join(s.base, "sim-root-"+c.Name) }

// runSimulator runs `csi-kubelet-sim run` on the case with the server's
// pod UID, against a recording driver of its own, and returns its calls.
// A driver with requiresRepublish gets its pod held a second, for the
// republish that follows the first publish on both sides.
func runSimulator(ctx context.Context, t *testing.T, s *stack, c difftable.Case, o objects, sim, uid string) ([]recorder.Call, simReport) {
	dir := filepath.Join(s.base, "sim-"+c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, c.Name+".yaml")
	writeFile(t, manifest, strings.ReplaceAll(o.yaml, string(o.pod.UID), uid))
	socket := filepath.Join(dir, "csi.sock")
	mkdirs(t, filepath.Join(dir, "images"))
	rec, err := recorder.Start(socket, recorderConfig(c.Caps, filepath.Join(dir, "images")), nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--endpoint", "unix://" + socket, "--root-dir", simRoot(s, c), "--node-name", nodeName,
		"--kubelet-version", kubeMinorVersion(), "--volume-stats-agg-period", "0", "--selinux=false", "-o", "json",
		"--service-account-key-file", s.saKey, "-f", manifest}
	if requiresRepublish(o) {
		args = append(args, "--hold", republishWait(o).String())
	}
	args = append(args, c.SimArgs...)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, sim, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if left := rec.Stop(); len(left) > 0 {
		t.Errorf("the simulator's driver had to release: %v", left)
	}
	if runErr != nil {
		t.Fatalf("%s %s: %v\n%s%s", sim, strings.Join(args, " "), runErr, stdout.String(), stderr.String())
	}
	report, err := parseSimReport(stdout.Bytes())
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", sim, strings.Join(args, " "), err, stdout.String())
	}
	return rec.Calls(), report
}

// createPod creates the case's pod, with the server's UID (fed back to the
// simulator), bound to the node by spec.nodeName (no scheduler). A pod with
// claims of its own (generic ephemeral volumes) is created unbound, its
// claims made with its UID, then bound through pods/binding, as the
// ephemeral volume controller and the scheduler would. Ephemeral containers
// cannot be set on create: they are added at once through the pod's
// ephemeralcontainers subresource, as kubectl debug adds them.
func (s *stack) createPod(ctx context.Context, t *testing.T, o objects) *corev1.Pod {
	pod := o.pod.DeepCopy()
	pod.UID = ""
	owned := false
	for _, pvc := range o.pvcs {
		owned = owned || ownedByPod(pvc)
	}
	pod.Spec.NodeName = nodeName
	if owned {
		pod.Spec.NodeName = ""
	}
	ephemeral := pod.Spec.EphemeralContainers
	pod.Spec.EphemeralContainers = nil
	pods := s.client.CoreV1().Pods(o.pod.Namespace)
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Pod: %v", err)
	}
	name := pod.Name
	t.Cleanup(func() {
		// A case that failed before it deleted its pod: gone before the
		// next case, its volumes torn down by the kubelet meanwhile.
		zero := int64(0)
		if pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) == nil {
			time.Sleep(3 * time.Second)
		}
	})
	if owned {
		o.createOwned(ctx, t, s, pod)
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}
		if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Pod binding: %v", err)
		}
	}
	if len(ephemeral) > 0 {
		// The kubelet may write the pod's status in between: on a
		// conflict, again on the pod as it is now.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.EphemeralContainers = ephemeral
			updated, err := pods.UpdateEphemeralContainers(ctx, name, cur, metav1.UpdateOptions{})
			if err == nil {
				pod = updated
			}
			return err
		})
		if err != nil {
			t.Fatalf("Pod's ephemeral containers: %v", err)
		}
	}
	return pod
}

// caseQuiet is how long the driver must get no call after a case's pod
// started or was torn down, where a condition says the calls are done.
const caseQuiet = 300 * time.Millisecond

// published waits until the pod's volumes are published and tells whether
// the pod started. Every volume is mounted before the kubelet makes the
// pod's sandbox (WaitForAttachAndMount in SyncPod), so the pod ready to
// start containers is the publish done, then a short quiet. A driver with
// requiresRepublish gets its republish right after the first publish: the
// driver quiet for republishWait, as long as the simulator holds the pod.
func (d *driver) published(ctx context.Context, t *testing.T, s *stack, pod *corev1.Pod, o objects) bool {
	if requiresRepublish(o) {
		d.settleFor(ctx, t, republishWait(o))
		return s.podStarted(ctx, pod)
	}
	started := s.podStarted(ctx, pod)
	d.settleFor(ctx, t, caseQuiet)
	return started
}

func requiresRepublish(o objects) bool {
	return o.driver != nil && o.driver.Spec.RequiresRepublish != nil && *o.driver.Spec.RequiresRepublish
}

// republishWait is how long after the first publish both sides wait for the
// republish that follows it (the pod sync after the containers' start): a
// second from 1.36 (PLEGOnDemandRelist: at once), two before (the PLEG's
// periodic relist, every second); a second for a driver without
// requiresRepublish (quiet).
func republishWait(o objects) time.Duration {
	if requiresRepublish(o) && kubeMinor() < 36 {
		return 2 * time.Second
	}
	return time.Second
}

// withoutSecondEarlySync: the whole kubelet at times syncs a running pod
// twice right after its start (the on-demand relist's sync, then another
// within a second), so a requiresRepublish volume gets one republish more
// than the simulator's single early sync makes. The kubelet's stream with
// one republish (a pod sync's calls identical to the republish just before
// them) taken out: whether that makes both streams the same.
func withoutSecondEarlySync(kubelet, sim []string) bool {
	want := strings.Join(sim, "\n")
	for n := 1; n <= 4; n++ { // a sync's calls: NodeGetCapabilities... NodePublishVolume
		for i := n; i+n <= len(kubelet); i++ {
			if !strings.Contains(kubelet[i+n-1], "/csi.v1.Node/NodePublishVolume") ||
				strings.Join(kubelet[i-n:i], "\n") != strings.Join(kubelet[i:i+n], "\n") {
				continue
			}
			out := append(append([]string{}, kubelet[:i]...), kubelet[i+n:]...)
			if strings.Join(out, "\n") == want {
				return true
			}
		}
	}
	return false
}

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
	if c.Gates != s.gates {
		s.restartKubelet(ctx, t, c.Gates)
	}
	if c.SELinuxLevel != "" {
		t.Logf("this host has no SELinux (no selinuxfs in /proc/filesystems): both sides run with SELinux off, the gates %q as given; the context= mount options need an SELinux host", c.Gates)
	}
	drv.serve(t, c)
	stuck := c.StuckAt(kubeMinor())
	if c.WholeKubeletRetries {
		stuck = "" // the retry succeeds: nothing is left to get stuck
	}
	if stuck != "" {
		// Registered before the pod's own cleanup, so run after it.
		t.Cleanup(func() { s.clearStuck(ctx, t, drv) })
	}
	o.create(ctx, t, s)

	mark := len(drv.rec.Calls())
	_, logMark := s.kubelet.logSince(0)
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
	teardown, what := drv.tornDown(mark), "teardown done"
	if stuck != "" {
		teardown, what = s.stuckAt(stuck, logMark), "teardown stuck at "+stuck
	}
	if _, err := waitFor(ctx, nil, what, 60*time.Second, teardown); err != nil {
		t.Fatalf("pod deleted: %v\nkubelet log:\n%s", err, s.kubelet.tail(40))
	}
	t.Logf("pod deleted -> %s %.2fs", what, time.Since(deleted).Seconds())
	// Nothing of the kubelet's follows the last teardown call: a short
	// quiet catches a stray call (it would land in the next case, which
	// would then differ).
	drv.settleFor(ctx, t, caseQuiet)
	wrote := s.written(ctx, t, pod, started)
	kubeletCalls := append(append([]recorder.Call{}, startup...), drv.rec.Calls()[mark:]...)
	kubeletLog, _ := s.kubelet.logSince(logMark)
	kubeletDone := time.Since(begin)

	run := runSimulator(ctx, t, s, c, o, sim, string(pod.UID), stuck)
	checkOutcome(t, c, stuck, kubeletLog, run, s)
	kubelet := callcompare.NormalizeAll(kubeletCalls, kubeletRoot)
	simLines := callcompare.NormalizeAll(run.calls, simRoot(s, c))
	writeStreams(t, out, c.Name, kubelet, simLines)
	t.Logf("case: whole kubelet %.1fs, with the simulator %.1fs", kubeletDone.Seconds(), time.Since(begin).Seconds())
	if strings.Join(kubelet, "\n") != strings.Join(simLines, "\n") {
		if withoutSecondEarlySync(kubelet, simLines) {
			t.Logf("the whole kubelet republished once more right after its early republish (its second early pod sync; the simulator makes one): otherwise identical")
		} else {
			t.Errorf("the whole kubelet and csi-kubelet-sim differ:\n%s", callcompare.Diff("whole kubelet", kubelet, simLines))
		}
	}
	if stuck != "" {
		// The kubelet writes no event for a teardown (the pod is gone):
		// the simulator's warning and failure for it were compared with
		// the kubelet's log above.
		run.report = run.report.withoutTeardown(stuck)
	}
	for _, d := range compareWritten(wrote, run.report) {
		t.Errorf("what the whole kubelet wrote and what csi-kubelet-sim reports differ: %s", d)
	}
}

// serve sets the driver up for the case: its node capabilities, its faults
// (counted from the case's start) and, for RegularFileBlockTarget, block
// volumes published as regular files; the test's cleanup of the case puts
// the faults and the block devices back.
func (d *driver) serve(t *testing.T, c difftable.Case) {
	if err := d.rec.SetNodeCapabilities(c.Caps); err != nil {
		t.Fatal(err)
	}
	d.rec.SetFaults(c.Faults)
	t.Cleanup(func() { d.rec.SetFaults(nil) })
	if c.RegularFileBlockTarget {
		d.rec.SetBlockDir("")
		t.Cleanup(func() { d.rec.SetBlockDir(d.images) })
	}
}

// stuckAt is a readiness check: the kubelet's log since offset has the
// error of a teardown that failed at prefix (the kubelet retries it for
// ever).
func (s *stack) stuckAt(prefix string, offset int) func(context.Context) error {
	return func(context.Context) error {
		log, _ := s.kubelet.logSince(offset)
		if callcompare.StuckError(prefix, log) == "" {
			return errNotYet
		}
		return nil
	}
}

// checkOutcome checks how the simulator's run ended against the whole
// kubelet: exit 0, or for a case whose teardown gets stuck exit 1 with the
// same error as the kubelet's log after the volume's name, or for a case
// where the simulator reports a failure the kubelet only records (SimFails)
// exit 1 with that error.
func checkOutcome(t *testing.T, c difftable.Case, stuck, kubeletLog string, run simRun, s *stack) {
	msgs := callcompare.SimMessages(run.stdout, run.stderr)
	switch {
	case stuck != "":
		// Each side's error names paths under its own root dir.
		k := strings.ReplaceAll(callcompare.StuckError(stuck, kubeletLog), kubeletRoot+"/", "<root>/")
		sm := strings.ReplaceAll(callcompare.StuckError(stuck, msgs), simRoot(s, c)+"/", "<root>/")
		switch {
		case run.code != 1 || sm == "":
			t.Errorf("csi-kubelet-sim should exit 1 stuck at %q as the whole kubelet is (%s); it exited %d\n%s", stuck, k, run.code, msgs)
		case k != sm:
			t.Errorf("stuck at %q with different errors:\n  whole kubelet: %s\n  simulator:     %s", stuck, k, sm)
		default:
			t.Logf("both sides stuck in teardown: %s", k)
		}
	case c.SimFails != "" && !c.WholeKubeletRetries:
		if run.code != 1 || !strings.Contains(run.stderr, c.SimFails) {
			t.Errorf("csi-kubelet-sim should exit 1 with %q; it exited %d\n%s", c.SimFails, run.code, run.stderr)
		} else {
			t.Logf("the simulator reported the failure, as expected: %s", strings.TrimSpace(run.stderr))
		}
	case run.code != 0:
		t.Fatalf("%s: exit %d\n%s%s", strings.Join(run.args, " "), run.code, run.stdout, run.stderr)
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

// simRun is how `csi-kubelet-sim run` went: the driver's calls, the
// report in its JSON trace, its output and exit code.
type simRun struct {
	args           []string
	calls          []recorder.Call
	report         simReport
	stdout, stderr string
	code           int
}

// runSimulator runs `csi-kubelet-sim run` on the case with the server's
// pod UID and the case's gates, against a recording driver of its own
// (with the case's faults), and returns how it went. A driver with
// requiresRepublish gets its pod held a second, for the republish that
// follows the first publish on both sides.
func runSimulator(ctx context.Context, t *testing.T, s *stack, c difftable.Case, o objects, sim, uid, stuck string) simRun {
	dir := filepath.Join(s.base, "sim-"+c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, c.Name+".yaml")
	writeFile(t, manifest, strings.ReplaceAll(o.yaml, string(o.pod.UID), uid))
	socket := filepath.Join(dir, "csi.sock")
	images := filepath.Join(dir, "images")
	mkdirs(t, images)
	if c.RegularFileBlockTarget {
		images = ""
	}
	cfg := recorderConfig(c.Caps, images)
	cfg.Faults = c.Faults
	rec, err := recorder.Start(socket, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{sim, "run", "--endpoint", "unix://" + socket, "--root-dir", simRoot(s, c), "--node-name", nodeName,
		"--kubelet-version", kubeMinorVersion(), "--volume-stats-agg-period", "0", "--selinux=false", "-o", "json",
		"--service-account-key-file", s.saKey, "-f", manifest}
	if c.Gates != "" {
		args = append(args, "--feature-gates", c.Gates)
	}
	if requiresRepublish(o) {
		args = append(args, "--hold", republishWait(o).String())
	}
	if c.WholeKubeletRetries {
		// The kubelet's first retry comes 500 ms after the failure, which
		// may come at the end of republishWait: a second more.
		args = append(args, "--retry-for", "1m", "--hold", (republishWait(o) + time.Second).String())
	}
	args = append(args, c.SimArgs...)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, args[0], args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	run := simRun{args: args, stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if runErr != nil && run.code <= 0 {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), runErr, run.stderr)
	}
	// A teardown stuck as the kubelet's leaves the volume for `cleanup`:
	// the test releases it, as clearStuck does the kubelet's.
	if left := rec.Stop(); len(left) > 0 && stuck == "" {
		t.Errorf("the simulator's driver had to release: %v", left)
	}
	if stuck != "" {
		releaseUnder(t, simRoot(s, c))
	}
	run.calls = rec.Calls()
	if run.report, err = parseSimReport(stdout.Bytes()); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, run.stdout)
	}
	return run
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
// than the simulator's single early sync makes. The relist reports the
// sandbox and the container as two ContainerStarted events; when the pod
// worker takes the first before the second arrives (a race of
// microseconds), the second is a sync of its own, which waits for the next
// periodic relist (pod_workers.go podWorkerLoop, GetNewerThan): about one
// pod in sixty. The kubelet's stream with
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

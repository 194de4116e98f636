package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoSpaceIsEnvironment: a root dir on a full file system (a 64 KiB
// tmpfs, filled so that the run's own files no longer fit at some step)
// is the machine's problem, not the input's: exit 3 (README, "Exit
// codes"), the error names ENOSPC, and the teardown leaves nothing. The
// test runs in the e2e tests' private mount namespace (TestMain).
func TestNoSpaceIsEnvironment(t *testing.T) {
	hit := 0
	// 4 KiB pages left free: the journal, the staging vol_data.json and
	// the pod's one take a page each; which step fails depends on how many
	// are left, and every one of them must exit 3.
	for _, free := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("free-%dpages", free), func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work)
			tiny := filepath.Join(work, "tiny")
			if err := os.Mkdir(tiny, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", tiny, "tmpfs", 0, "size=64k"); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(tiny, syscall.MNT_DETACH) })
			fill := make([]byte, (16-free)*4096)
			if err := os.WriteFile(filepath.Join(tiny, "fill"), fill, 0o644); err != nil {
				t.Fatalf("fill the tmpfs: %v", err)
			}
			root := filepath.Join(tiny, "root")
			r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
			if !strings.Contains(r.Stderr, "no space left on device") {
				if r.Code == 0 {
					t.Skipf("%d pages were enough for the whole run", free)
				}
				t.Fatalf("exit %d without ENOSPC\n%s", r.Code, r)
			}
			hit++
			wantCode(t, r, 3)
			oneLineError(t, r, "no space left on device")
			assertNothingLeft(t, root, "") // the tmpfs itself is the test's
			entries, _ := os.ReadDir(tiny)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("left on the tmpfs: %v, want only the test's fill", names)
			}
		})
	}
	if hit == 0 {
		t.Error("no run met ENOSPC: the tmpfs was not full enough")
	}
}

// TestAPIServerEtcdDiesWhileApplying: the run's own etcd killed while the
// API server takes the input (a thousand ConfigMaps before the pod) is the
// environment, not bad input: exit 3, and nothing of the run or its control
// plane is left. etcd is found from the simulator's own children (the
// helper, then its child etcd), never by a search of all processes.
func TestAPIServerEtcdDiesWhileApplying(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: default}\ndata: {k: v}\n---\n", i)
	}
	in.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n  volumes: [{name: v, csi: {driver: " + refDriverName + "}}]\n")
	f := writeFile(t, work, "in.yaml", in.String())
	root := filepath.Join(work, "root")
	sim := startSim(t, "run", "--apiserver", "-f", f, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
	audit := filepath.Join(root, ".csi-kubelet-sim", "apiserver", "audit.log")
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(readFile(audit), `"resource":"configmaps","namespace":"default","name":"cm-`) {
		select {
		case <-sim.exited:
			t.Fatalf("ended before the input was applied\n%s", sim.wait(t, time.Second))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no ConfigMap created after 90s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	etcd := 0
	for _, helper := range childPIDs(sim.cmd.Process.Pid) {
		for _, c := range childPIDs(helper) {
			if strings.TrimSpace(readFile(fmt.Sprintf("/proc/%d/comm", c))) == "etcd" {
				etcd = c
			}
		}
	}
	if etcd == 0 {
		t.Fatal("no etcd under the simulator's helper")
	}
	if err := syscall.Kill(etcd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, simTimeout)
	if strings.Contains(r.Stdout, "NodePublishVolume") {
		t.Skip("the input was applied before etcd died")
	}
	wantCode(t, r, 3)
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "control plane") {
		t.Errorf("last stderr line %q does not blame the control plane", last)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

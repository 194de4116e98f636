package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/fixtures/webhook"
)

// startHangingWebhook serves a webhook that answers nothing until the
// test ends; arrived is told of each request.
func startHangingWebhook(t *testing.T) (addr string, ca *webhook.CA, arrived <-chan struct{}) {
	t.Helper()
	ca, err := webhook.NewCA("volume-injector.webhooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-ctx.Done():
		}
	})
	addr, done, err := webhook.Serve(ctx, "127.0.0.1:0", ca, mux)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return addr, ca, got
}

// childPIDs are the processes pid started (the admission helper).
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		for _, s := range strings.Fields(readFile(f)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive tells whether a process exists and is not a zombie.
func alive(pid int) bool {
	stat := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if stat == "" {
		return false
	}
	if i := strings.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// TestInterruptDuringAdmission: Ctrl-C while a webhook hangs ends run,
// plan and load at once with exit 130 and a message naming the admission
// of the pod, instead of waiting out the webhook's 30 s timeout; the
// admission helper is gone and no root dir was made.
func TestInterruptDuringAdmission(t *testing.T) {
	addr, ca, arrived := startHangingWebhook(t)
	manifest := strings.Replace(webhookManifests(ca.PEM, "Fail", "/hang"), "    failurePolicy: Fail\n", "    failurePolicy: Fail\n    timeoutSeconds: 30\n", 1)
	for _, command := range []string{"run", "plan", "load"} {
		t.Run(command, func(t *testing.T) {
			work := workDir(t)
			file := writeFile(t, work, "pod.yaml", manifest)
			root := filepath.Join(work, "root")
			args := []string{command, "-f", file, "--root-dir", root, "--node-name", simNode, "--webhook-service", "webhooks/volume-injector=" + addr}
			if command != "plan" {
				args = append(args, "--endpoint", "unix://"+filepath.Join(work, "none.sock"))
			}
			sim := startSim(t, args...)
			select {
			case <-arrived:
			case <-sim.exited:
				t.Fatalf("ended before the webhook was called\n%s", sim.wait(t, time.Second))
			case <-time.After(20 * time.Second):
				t.Fatal("the webhook was never called")
			}
			helpers := childPIDs(sim.cmd.Process.Pid)
			if len(helpers) == 0 {
				t.Fatal("no admission helper under the simulator")
			}
			if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			// Well under the webhook's 30 s timeout: the signal was seen.
			r := sim.wait(t, 15*time.Second)
			wantCode(t, r, 130)
			oneLineError(t, r, "interrupted during the admission of Pod shop/checkout")
			for _, pid := range helpers {
				if alive(pid) {
					t.Errorf("admission helper %d still running", pid)
				}
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("root dir %s made (%v)", root, err)
			}
		})
	}
}

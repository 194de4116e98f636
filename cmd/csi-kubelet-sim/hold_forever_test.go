package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// --hold forever is ended by Ctrl-C, as documented: once every volume is
// mounted that is the run's end, not a failure (exit 0, result OK); an
// interrupt before that, or SIGTERM (a timeout, a supervisor stopping the
// run from outside), is still 130 (issue 32).
func TestHoldForeverEndedByInterrupt(t *testing.T) {
	const staged = "../../fixtures/samples/staged/staged.yaml"
	for _, tc := range []struct {
		name     string
		cancelAt string // the call during or after which the interrupt comes
		sig      os.Signal
		output   string
		want     int
	}{
		{"after the mounts", "NodePublishVolume", os.Interrupt, "text", session.ExitOK},
		{"after the mounts, json", "NodePublishVolume", os.Interrupt, "json", session.ExitOK},
		{"SIGTERM after the mounts", "NodePublishVolume", syscall.SIGTERM, "text", session.ExitInterrupted},
		{"during the mounts", "NodeStageVolume", os.Interrupt, "text", session.ExitInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stagingDriver()
			// The context as main's signal watcher cancels it.
			ctx, cancelCause := context.WithCancelCause(context.Background())
			cancel := func() { cancelCause(session.InterruptedBy{Sig: tc.sig}) }
			defer cancel()
			if tc.cancelAt == "NodeStageVolume" {
				// The interrupt comes while NodeStageVolume is in flight.
				d.Inject(tc.cancelAt, csifake.Fault{Times: 1, Func: func(_ context.Context, _ proto.Message, answer csifake.Answer) (proto.Message, error) {
					cancel()
					return answer()
				}})
			}
			// The interrupt comes once the simulator printed the call's
			// answer (the driver's answer may still be on its way before).
			var out lockedBuffer
			printed := regexp.MustCompile(`"method":"` + tc.cancelAt + `"[^\n]*"result":"OK"|` + tc.cancelAt + ` +OK `)
			if tc.cancelAt == "NodePublishVolume" {
				go func() {
					for ctx.Err() == nil && !printed.MatchString(out.String()) {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
			}
			sock := csifake.ServeTest(t, d)
			root := filepath.Join(t.TempDir(), "root")
			var errb bytes.Buffer
			code := run(ctx, []string{"run", "-f", staged, "--endpoint", sock, "--root-dir", root, "--node-name", "n1", "--hold", "forever", "-o", tc.output},
				session.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out.String(), errb.String())
			}
			if len(d.Staged()) != 0 || len(d.PublishedVolumes()) != 0 {
				t.Errorf("left with the driver: staged %v, published %v", d.Staged(), d.PublishedVolumes())
			}
			if tc.want != session.ExitOK {
				return
			}
			switch tc.output {
			case "text":
				if !strings.Contains(out.String(), "result      OK") || !strings.Contains(out.String(), "ended by Ctrl-C (--hold forever)") {
					t.Errorf("summary does not say OK and how the hold ended:\n%s", out.String())
				}
			case "json":
				rec := lastRecord(t, out.String())
				if rec["result"] != "OK" || rec["hold_ended"] != true || rec["interrupted"] != true {
					t.Errorf("summary %v, want result OK, hold_ended and interrupted true", rec)
				}
			}
		})
	}
}

// lockedBuffer is a stdout a test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

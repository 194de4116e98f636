package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

// TestEnvironmentFaults: exit 3 when the driver cannot be reached (README,
// "Exit codes"), one line on stderr, nothing left behind.
func TestEnvironmentFaults(t *testing.T) {
	t.Run("no-socket-file", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		root := filepath.Join(work, "root")
		sock := filepath.Join(work, "absent.sock")
		r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+sock, "--root-dir", root, "--node-name", simNode)
		wantCode(t, r, 3)
		oneLineError(t, r, sock)
		assertNothingLeft(t, root, work)
	})

	t.Run("nobody-listening", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		root := filepath.Join(work, "root")
		sock := filepath.Join(work, "dead.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		if st, err := os.Stat(sock); err != nil || st.Mode()&os.ModeSocket == 0 {
			t.Fatalf("the socket file should remain: %v", err)
		}
		r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+sock, "--root-dir", root, "--node-name", simNode)
		wantCode(t, r, 3)
		oneLineError(t, r, sock)
		assertNothingLeft(t, root, work)
	})

	t.Run("never-answers", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		root := filepath.Join(work, "root")
		sock := filepath.Join(work, "silent.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		// Accept every connection and never write a byte.
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			l.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
		start := time.Now()
		r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+sock, "--root-dir", root,
			"--node-name", simNode, "--timeout", "1s")
		elapsed := time.Since(start)
		wantCode(t, r, 3)
		msg := oneLineError(t, r)
		if !strings.Contains(strings.ToLower(msg), "deadline") {
			t.Errorf("message %q does not mention the deadline", msg)
		}
		// The socket never answers: a run that ignored --timeout would
		// hang, and runSim's own bound fails it. A deadline never fires
		// early, so the run lasted at least the timeout.
		if elapsed < time.Second {
			t.Errorf("--timeout 1s, but the run took only %v", elapsed)
		}
		assertNothingLeft(t, root, work)
	})
}

// TestInputFaults: exit 2 for bad manifests and for what the kubelet refuses
// (README, "Exit codes"), with a one-line message naming what is wrong.
func TestInputFaults(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)

	staged := readFile(filepath.Join(sample(t, "staged"), "staged.yaml"))
	inline := readFile(filepath.Join(sample(t, "inline"), "inline.yaml"))
	secrets := readFile(filepath.Join(sample(t, "secrets"), "secrets.yaml"))
	attach := readFile(filepath.Join(sample(t, "attach"), "attach.yaml"))

	// dropDocs removes the YAML documents whose text contains any of kinds.
	dropDocs := func(y string, kinds ...string) string {
		var keep []string
		for _, d := range strings.Split(y, "\n---\n") {
			drop := false
			for _, k := range kinds {
				if strings.Contains(d, "\nkind: "+k+"\n") {
					drop = true
				}
			}
			if !drop {
				keep = append(keep, d)
			}
		}
		return strings.Join(keep, "\n---\n")
	}
	mustReplace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("fixture changed: %q not found", old)
		}
		return strings.Replace(s, old, new, 1)
	}

	cases := []struct {
		name  string
		files map[string]string // written into a fresh dir passed with -f
		args  []string
		want  []string
	}{
		{
			name: "malformed-yaml",
			files: map[string]string{"bad.yaml": "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: ref.csi.kubelet-sim.io\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n"},
			want: []string{"bad.yaml", "document 2"},
		},
		{
			name: "claim-without-pv",
			files: map[string]string{
				"claim.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
  volumeName: pv-missing
`,
				"pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: default
  uid: 9a3c3c6e-2222-4d2b-9c51-0e2f8d1a7b02
spec:
  containers:
    - name: db
      image: registry.k8s.io/pause:3.10
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data
`},
			want: []string{"claim.yaml", "pv-missing"},
		},
		{
			name:  "unknown-field",
			files: map[string]string{"staged.yaml": mustReplace(staged, "    fsType: ext4\n", "    fsType: ext4\n    bogusField: x\n")},
			want:  []string{"staged.yaml", "spec.csi.bogusField"},
		},
		{
			// docs/kubelet.md §2: the mode check, with the kubelet's own text.
			name: "lifecycle-mode-not-allowed",
			files: map[string]string{"inline.yaml": mustReplace(inline,
				"volumeLifecycleModes: [Ephemeral, Persistent]", "volumeLifecycleModes: [Persistent]")},
			want: []string{`volume mode "Ephemeral" not supported by driver ref.csi.kubelet-sim.io (only supports ["Persistent"])`},
		},
		{
			// docs/kubelet.md §9.
			name:  "missing-secret",
			files: map[string]string{"secrets.yaml": dropDocs(secrets, "Secret")},
			want:  []string{"failed to find the secret", "stage-creds"},
		},
		{
			// docs/kubelet.md §10: the VolumeAttachment the kubelet GETs is named
			// from the handle, the driver and the node.
			name:  "missing-volumeattachment",
			files: map[string]string{"attach.yaml": dropDocs(attach, "VolumeAttachment")},
			want:  []string{attachmentName("vol-attached-1", refDriverName, simNode)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(work, tc.name)
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			root := filepath.Join(work, tc.name+"-root")
			r := runSim(t, append([]string{"run", "-f", dir, "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode}, tc.args...)...)
			wantCode(t, r, 2)
			oneLineError(t, r, tc.want...)
			assertNothingLeft(t, root, work)
		})
	}
}

// TestDriverFailures: a driver that fails NodeStage or NodePublish with a
// final code (NotFound, docs/kubelet.md §12) makes the run exit 1; the kubelet
// removes the directories it made (1.7) and, the error being final, calls no
// unpublish/unstage for the volume that never got mounted (12).
func TestDriverFailures(t *testing.T) {
	const handle = "no-such-volume" // the mock knows only "1".."3"
	manifests := func() string {
		return pvManifests(csiDriverDoc("  attachRequired: false\n"), "pv-unknown", handle, "[ReadWriteOnce]", "", "", false)
	}
	cases := []struct {
		name       string
		mockFlags  []string
		failMethod string
		wantCalls  []string
		removed    func(root string) []string // directories/files the kubelet removes after the failure
	}{
		{
			name:       "node-stage-not-found",
			mockFlags:  []string{"--disable-attach"},
			failMethod: "NodeStageVolume",
			wantCalls: []string{"GetPluginInfo", "NodeGetInfo",
				"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodeStageVolume"},
			removed: func(root string) []string {
				st := stagingPath(root, mockDriver, handle)
				return []string{st, filepath.Join(filepath.Dir(st), "vol_data.json"), filepath.Dir(st)}
			},
		},
		{
			name:       "node-publish-not-found",
			mockFlags:  []string{"--disable-attach", "--disable-node-stage"},
			failMethod: "NodePublishVolume",
			wantCalls: []string{"GetPluginInfo", "NodeGetInfo", "NodeGetCapabilities",
				"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodePublishVolume"},
			removed: func(root string) []string {
				tp := targetPath(root, mockPodUID, "pv-unknown")
				return []string{filepath.Join(filepath.Dir(tp), "vol_data.json"), filepath.Dir(tp)}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, tc.mockFlags...)
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "manifests.yaml", manifests())
			r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root,
				"--node-name", simNode, "-o", "json", "-v")
			got := mockCalls(t, mock)
			wantCode(t, r, 1)
			oneLineError(t, r, "NotFound", handle)
			assertNothingLeft(t, root, work)

			if gm := mockMethods(got); strings.Join(gm, ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("calls received:\n got %v\nwant %v", gm, tc.wantCalls)
			}
			fails := mocklog.Filter(got, tc.failMethod)
			if len(fails) != 1 || fails[0].Code != 5 {
				t.Errorf("want one %s answered NotFound (5), got %+v", tc.failMethod, fails)
			}

			// The trace: the failed call, then the kubelet's removals (the
			// run's -v steps), in docs/kubelet.md §1.7 order.
			lines := parseTrace(t, r)
			failedAt := -1
			for i, l := range lines {
				if l.Kind == "call" && l.Method == tc.failMethod {
					failedAt = i
					if l.Code != "NotFound" {
						t.Errorf("%s code %q in the trace, want NotFound", tc.failMethod, l.Code)
					}
				}
			}
			if failedAt < 0 {
				t.Fatalf("no %s in the trace", tc.failMethod)
			}
			var removedSteps []string
			for _, l := range lines[failedAt+1:] {
				if l.Kind == "call" {
					t.Errorf("call after the final %s failure: %s", tc.failMethod, l.Raw)
				}
				if l.Kind == "step" && strings.HasPrefix(l.Text, "removed ") && l.Component == "kubelet" {
					removedSteps = append(removedSteps, strings.TrimPrefix(l.Text, "removed "))
				}
			}
			if want := tc.removed(root); strings.Join(removedSteps, "\n") != strings.Join(want, "\n") {
				t.Errorf("kubelet removals after the failure:\n got %q\nwant %q", removedSteps, want)
			}
			if s := summary(t, lines); s.Error == "" {
				t.Errorf("summary has no error: %s", s.Raw)
			}
		})
	}
}

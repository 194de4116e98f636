package sidecars

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Two runs of the same claim (same UID) on two root dirs against one
// driver get one volume: the first to finish keeps it for the other, which
// deletes it; neither deletes it while the other lives.
func TestProvisionedVolumeSharedByTwoRuns(t *testing.T) {
	holders := filepath.Join(t.TempDir(), "volumes")
	d := fakeDriver()
	start := func() (*Controllers, *csiclient.Trace, string) {
		c := load(t, class(""), claimDoc, podDoc)
		trace := csiclient.NewTrace()
		ctl, root := newControllers(t, c, d, func(cfg *Config) { cfg.HoldersDir = holders; cfg.Trace = trace })
		pod, _ := c.Pod("ns1", "p")
		if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
			t.Fatal(err)
		}
		return ctl, trace, root
	}
	first, firstTrace, _ := start()
	second, _, secondRoot := start()
	if n := len(d.CallsOf("CreateVolume")); n != 2 {
		t.Fatalf("%d CreateVolume calls, want one per run", n)
	}
	if errs := first.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 0 {
		t.Fatalf("the first run to finish called DeleteVolume %d times on the volume the other run uses", n)
	}
	if v := first.Volumes()[0]; !v.Kept || v.Deleted {
		t.Errorf("first run's volume: kept %v deleted %v", v.Kept, v.Deleted)
	}
	if !strings.Contains(traceText(firstTrace), "kept: in use by the run of root dir "+secondRoot) {
		t.Errorf("no note naming the other run's root dir:\n%s", traceText(firstTrace))
	}
	if errs := second.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 1 {
		t.Errorf("the last run called DeleteVolume %d times, want 1", n)
	}
	if entries, _ := os.ReadDir(holders); len(entries) != 0 {
		t.Errorf("the register keeps %d entries after both runs", len(entries))
	}
}

// A run that is gone (its entry left, its flock dropped with its process)
// holds nothing: the volume is deleted, the stale entry removed.
func TestProvisionedVolumeStaleHolder(t *testing.T) {
	holders := filepath.Join(t.TempDir(), "volumes")
	d := fakeDriver()
	c := load(t, class(""), claimDoc, podDoc)
	ctl, _ := newControllers(t, c, d, func(cfg *Config) { cfg.HoldersDir = holders })
	pod, _ := c.Pod("ns1", "p")
	if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(holders, "*"))
	if len(dirs) != 1 {
		t.Fatalf("register dirs %v, want one", dirs)
	}
	stale := filepath.Join(dirs[0], "1-1"+holderSuffix)
	if err := os.WriteFile(stale, []byte(`{"root_dir":"/gone"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if errs := ctl.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 1 {
		t.Errorf("DeleteVolume called %d times with only a dead holder beside, want 1", n)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead run's entry is left: %v", err)
	}
}

// traceText is a trace's steps, one a line.
func traceText(tr *csiclient.Trace) string {
	var b strings.Builder
	for _, s := range tr.Steps() {
		b.WriteString(s.Text + "\n")
	}
	return b.String()
}

// `cleanup` of a run that is gone keeps a volume another live run holds:
// no DeleteVolume, a note naming that run's root dir, the record done.
func TestCleanupKeepsVolumeHeldElsewhere(t *testing.T) {
	holders := filepath.Join(t.TempDir(), "volumes")
	d := fakeDriver()
	start := func() (*Controllers, string) {
		c := load(t, class(""), claimDoc, podDoc)
		ctl, root := newControllers(t, c, d, func(cfg *Config) { cfg.HoldersDir = holders })
		pod, _ := c.Pod("ns1", "p")
		if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
			t.Fatal(err)
		}
		return ctl, root
	}
	gone, goneRoot := start()
	live, liveRoot := start()
	// The first run is killed: its entry's flock goes with it.
	for _, h := range gone.holds {
		h.f.Close()
	}
	d.ClearCalls()
	trace := csiclient.NewTrace()
	if errs := Cleanup(context.Background(), CleanupConfig{RootDir: goneRoot, Conn: d, Trace: trace, HoldersDir: holders}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 0 {
		t.Errorf("cleanup called DeleteVolume %d times on the volume the live run holds", n)
	}
	if !strings.Contains(traceText(trace), "kept: in use by the run of root dir "+liveRoot) {
		t.Errorf("no note naming the live run:\n%s", traceText(trace))
	}
	if rs, _ := Records(goneRoot); len(rs) > 0 {
		t.Errorf("records left: %v", rs)
	}
	if errs := live.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := len(d.CallsOf("DeleteVolume")); n != 1 {
		t.Errorf("the live run called DeleteVolume %d times at its end, want 1", n)
	}
}

// A volume kept (--keep-volumes) leaves nothing in the register at the
// run's end.
func TestKeptVolumeLeavesNoEntry(t *testing.T) {
	holders := filepath.Join(t.TempDir(), "volumes")
	d := fakeDriver()
	c := load(t, class(""), claimDoc, podDoc)
	ctl, _ := newControllers(t, c, d, func(cfg *Config) { cfg.HoldersDir = holders; cfg.KeepVolumes = true })
	pod, _ := c.Pod("ns1", "p")
	if err := ctl.Prepare(context.Background(), testRegistration(), []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	if errs := ctl.Finish(context.Background(), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if entries, _ := os.ReadDir(holders); len(entries) != 0 {
		t.Errorf("the register keeps %d entries after a run that kept its volume", len(entries))
	}
}

// One socket spelled two ways (a symlink, a doubled slash) is one driver:
// one register directory.
func TestVolumeDirSocketSpellings(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "csi.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	want := volumeDir("/r", "d", sock, "pvc-1")
	for _, ep := range []string{link, dir + "//csi.sock"} {
		if got := volumeDir("/r", "d", ep, "pvc-1"); got != want {
			t.Errorf("%s: register dir %s, want %s (the socket's)", ep, got, want)
		}
	}
	if volumeDir("/r", "d", sock, "pvc-2") == want || volumeDir("/r", "other", sock, "pvc-1") == want {
		t.Error("another name or driver shares the directory")
	}
}

// The register lives in a directory of this user's alone: in a shared temp
// dir another user may have made it, or its parent, first.
func TestHoldersDirRefusesOthers(t *testing.T) {
	t.Run("group-writable parent", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "sim")
		if err := os.Mkdir(parent, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := holdVolume(filepath.Join(parent, "volumes"), "d", "/s.sock", "v", "/root")
		if err == nil || !strings.Contains(err.Error(), "may be written by others") {
			t.Fatalf("holdVolume in a world-writable parent: %v, want a refusal", err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(t.TempDir(), filepath.Join(dir, "volumes")); err != nil {
			t.Fatal(err)
		}
		_, err := holdVolume(filepath.Join(dir, "volumes"), "d", "/s.sock", "v", "/root")
		if err == nil || !strings.Contains(err.Error(), "not a plain directory") {
			t.Fatalf("holdVolume through a symlink: %v, want a refusal", err)
		}
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a directory of another user's")
		}
		dir := filepath.Join(t.TempDir(), "volumes")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := holdVolume(dir, "d", "/s.sock", "v", "/root")
		if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Fatalf("holdVolume in another user's dir: %v, want a refusal", err)
		}
	})
}

// Root's register is machine-wide; a user's is their own (/run is root's).
func TestDefaultHoldersDir(t *testing.T) {
	got := DefaultHoldersDir()
	if os.Geteuid() == 0 {
		if got != "/run/csi-kubelet-sim/volumes" {
			t.Fatalf("root's register: %s", got)
		}
		return
	}
	if strings.HasPrefix(got, "/run/csi-kubelet-sim") {
		t.Fatalf("a user's register in root's /run: %s", got)
	}
}

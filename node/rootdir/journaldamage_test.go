package rootdir

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// within runs f and fails the test when it does not return in time: a
// blocking open of a FIFO never returns (the goroutine is left behind).
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s hangs", what)
		panic("unreachable")
	}
}

func mkJournalDir(t *testing.T) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, JournalDir)
	must(t, os.Mkdir(dir, 0o700))
	return root, dir
}

// The lock file as a hard link to a file elsewhere: refused, the file
// keeps its content (it used to be truncated and get the owner's JSON).
func TestLockRootHardLinkRefused(t *testing.T) {
	root, dir := mkJournalDir(t)
	foreign := filepath.Join(t.TempDir(), "precious")
	must(t, os.WriteFile(foreign, []byte("precious data\n"), 0o600))
	must(t, os.Link(foreign, filepath.Join(dir, LockFileName)))
	l, err := LockRoot(root, "run")
	if err == nil {
		l.Release()
	}
	if !IsForeignFile(err) || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("LockRoot = %v, want a hard link refused", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "precious data\n" {
		t.Errorf("the foreign file now holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, LockFileName)); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
}

// A FIFO at the lock path: refused by name, not "invalid argument", and
// left where it is; RootHolder does not block on it.
func TestLockRootFIFORefused(t *testing.T) {
	root, dir := mkJournalDir(t)
	fifo := filepath.Join(dir, LockFileName)
	must(t, unix.Mkfifo(fifo, 0o600))
	err := within(t, "LockRoot on a FIFO", func() error {
		l, err := LockRoot(root, "run")
		if err == nil {
			l.Release()
		}
		return err
	})
	if !IsForeignFile(err) || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), fifo) {
		t.Errorf("LockRoot = %v, want the FIFO named and refused", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v", err)
	}
	if held := within(t, "RootHolder on a FIFO", func() bool { _, ok := RootHolder(root); return ok }); held {
		t.Error("a FIFO counted as a held lock")
	}
}

// A FIFO named like a journal: reading it neither blocks nor is taken as
// a journal; nor is its writer asked after.
func TestJournalFIFORefused(t *testing.T) {
	root, dir := mkJournalDir(t)
	fifo := filepath.Join(dir, "run-1-1.journal")
	must(t, unix.Mkfifo(fifo, 0o600))
	js, err := Journals(root)
	if err != nil || len(js) != 1 {
		t.Fatalf("Journals = %v, %v", js, err)
	}
	err = within(t, "readJournal of a FIFO", func() error { _, err := ReadJournal(js[0]); return err })
	if !IsForeignFile(err) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("readJournal = %v, want the FIFO refused", err)
	}
	if live := within(t, "LiveJournalOwner of a FIFO", func() bool { _, ok := LiveJournalOwner(js); return ok }); live {
		t.Error("a FIFO counted as a live run's journal")
	}
}

// countingReader is an endless line of 'x', counting what is read of it.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= 64<<20 {
		return 0, io.EOF
	}
	for i := range p {
		p[i] = 'x'
	}
	r.n += int64(len(p))
	return len(p), nil
}

// A journal line over 1 MiB is refused as damaged, and read no further
// than the bound; a record just under it is read whole. The writer
// refuses to write one such line, and a volume whose vol_data.json record
// would be one.
func TestJournalRecordBound(t *testing.T) {
	long := `{"k":"dir","p":"` + strings.Repeat("a", 2<<20) + "\"}\n"
	_, err := ParseJournal(strings.NewReader(`{"k":"run","pid":1}` + "\n" + long + `{"k":"dir","p":"/r/x"}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2 is longer than 1 MiB") {
		t.Errorf("a 2 MiB line: %v, want it refused as damaged", err)
	}
	r := &countingReader{}
	if _, err := ParseJournal(r); err == nil {
		t.Error("a 64 MiB line read without an error")
	}
	if r.n > 2<<20 {
		t.Errorf("read %d bytes of an endless line, want no more than the bound and a buffer", r.n)
	}
	handle := strings.Repeat("h", 1000*1024)
	line, _ := json.Marshal(JournalRecord{Kind: RecordVolData, Path: "/r/x", Data: map[string]string{"volumeHandle": handle}})
	jc, err := ParseJournal(bytes.NewReader(append(line, '\n')))
	if err != nil || jc.VolData["/r/x"]["volumeHandle"] != handle {
		t.Errorf("a record of %d bytes: %v", len(line), err)
	}
	if err := JournalRecordFits("/r/x", map[string]string{"volumeHandle": strings.Repeat("h", 1200*1024)}); err == nil {
		t.Error("a 1.2 MB handle fits a journal record")
	}
	f := NewFileSystem(t.TempDir())
	f.Record(JournalRecord{Kind: RecordRun})
	if err := f.Journal.Write(JournalRecord{Kind: RecordVolData, Data: map[string]string{"volumeHandle": strings.Repeat("h", 2<<20)}}); err == nil {
		t.Error("a 2 MiB record written")
	}
	f.Journal.Close()
}

// A torn last line is an intent whose action never happened: dropped,
// even when only its newline is missing.
func TestJournalTornLastLine(t *testing.T) {
	in := `{"k":"run","pid":1}
{"k":"dir","p":"/r/a"}
{"k":"dir","p":"/r/b"}`
	jc, err := ParseJournal(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if jc.Owned["/r/a"] != RecordDir || len(jc.Owned) != 1 {
		t.Errorf("owned = %v, want /r/a only", jc.Owned)
	}
}

// Liveness is the flock's alone: a journal whose header names a live PID
// without start ticks, or a killed process not yet reaped (a zombie, with
// its PID and start ticks), has no live writer; a journal another process
// holds the flock of has one, named by its header.
func TestJournalWriterLiveness(t *testing.T) {
	_, dir := mkJournalDir(t)
	write := func(name string, h JournalRecord) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(h)
		must(t, os.WriteFile(p, append(b, '\n'), 0o600))
		return p
	}
	noTicks := write("run-1-1.journal", JournalRecord{Kind: RecordRun, PID: 1, Command: "run"})
	zombie := exec.Command("sleep", "60")
	must(t, zombie.Start())
	ticks, err := ProcessStartTicks(zombie.Process.Pid)
	must(t, err)
	zj := write("run-2-2.journal", JournalRecord{Kind: RecordRun, PID: zombie.Process.Pid, StartTicks: ticks, Command: "run"})
	must(t, zombie.Process.Signal(unix.SIGKILL))
	defer zombie.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(zombie.Process.Pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed child never became a zombie")
		}
	}
	for _, j := range []string{noTicks, zj} {
		if o, live := LiveJournalOwner([]string{j}); live {
			t.Errorf("%s: a live writer %v, want none (no flock held)", filepath.Base(j), o)
		}
	}
	held := write("run-3-3.journal", JournalRecord{Kind: RecordRun, PID: 4242, Command: "load"})
	// Another process holds its flock: this test binary again, as
	// TestFlockHolderProcess.
	holder := exec.Command(os.Args[0], "-test.run=^TestFlockHolderProcess$")
	holder.Env = append(os.Environ(), flockHolderEnv+"="+held)
	must(t, holder.Start())
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		o, live := LiveJournalOwner([]string{held})
		if live {
			if o.PID != 4242 || o.Command != "load" {
				t.Errorf("live writer named %+v, want the header's", o)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a journal flocked by another process has no live writer")
		}
	}
}

const flockHolderEnv = "CSI_KUBELET_SIM_TEST_FLOCK_HOLDER"

// TestFlockHolderProcess is a process that holds an flock on the file
// $CSI_KUBELET_SIM_TEST_FLOCK_HOLDER for a minute (TestJournalWriterLiveness
// starts it); without it, it does nothing.
func TestFlockHolderProcess(t *testing.T) {
	p := os.Getenv(flockHolderEnv)
	if p == "" {
		t.Skip("a helper process of TestJournalWriterLiveness")
	}
	f, err := os.Open(p)
	must(t, err)
	must(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	time.Sleep(time.Minute)
}

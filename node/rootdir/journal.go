package rootdir

// journal.go has no kubelet counterpart: the kubelet reconstructs from its
// root dir (pkg/kubelet/volumemanager/reconciler/reconstruct.go); the
// simulator, a guest on the node, writes down what it made.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// journal record kinds.
const (
	RecordRun   = "run"   // the header: who wrote the journal
	RecordDir   = "dir"   // a directory the simulator created
	recordFile  = "file"  // a file or symlink the simulator created
	recordMount = "mount" // a path that is or was a mount point (handed to the driver, or bind-mounted by the kubelet)
	// a copy of a vol_data.json the simulator wrote, with its directory:
	// `cleanup` rebuilds a volume from it when a failed operation took the
	// file itself away (see reconstructFromJournal).
	RecordVolData = "voldata"
	// a driver call that makes a mount (NodeStageVolume,
	// NodePublishVolume) at a path, before it is sent; recordCalled is its
	// outcome. An intent without its outcome is a call the driver may
	// still be in: `cleanup` never unmounts that path itself, it asks the
	// driver (reconstruction).
	recordCall   = "call"
	recordCalled = "called"
)

// testKillAtEnv makes the process SIGKILL itself just before it writes
// journal record N (1: the header), records 1..N-1 written and synced.
// Test-only: it is how the e2e tests crash a run at every step.
const testKillAtEnv = "CSI_KUBELET_SIM_TEST_KILL_AT"

// JournalRecord is one line of a journal.
type JournalRecord struct {
	Kind       string            `json:"k"`
	Path       string            `json:"p,omitempty"`
	Op         string            `json:"op,omitempty"`
	PID        int               `json:"pid,omitempty"`
	StartTicks uint64            `json:"start_ticks,omitempty"`
	Started    time.Time         `json:"started,omitzero"`
	Command    string            `json:"cmd,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
}

// owner is the header's process, to name it: whether it still runs is
// the journal's flock's to tell (journalWriter).
func (r JournalRecord) owner() LockOwner {
	return LockOwner{PID: r.PID, StartTicks: r.StartTicks, Started: r.Started, Command: r.Command}
}

// maxJournalRecord bounds one journal line, newline excluded: a longer
// line is no record the simulator writes (it refuses to, see
// journalRecordFits), so a journal that has one is damaged, and reading
// it stops there instead of holding the line in memory.
const maxJournalRecord = 1 << 20

// journal appends records to one file. Each line is written and synced
// before the action it announces: a killed process loses nothing, and a
// machine that loses power nothing that was acted on. The writer holds an
// flock on it for its whole life: that, not the header's PID, is how a
// later command tells a live writer (journalWriter).
type journal struct {
	Path    string
	f       *os.File
	steps   int
	killAt  int          // testKillAtEnv; 0: never
	written atomic.Int64 // records written
	syncMu  sync.Mutex
	synced  int64 // records known synced (syncMu)
}

func openJournal(root, command string) (*journal, error) {
	dirfd, err := openJournalDir(root, true)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer unix.Close(dirfd)
	name := fmt.Sprintf("run-%d-%d.journal", os.Getpid(), time.Now().UnixNano())
	p := filepath.Join(root, JournalDir, name)
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", p, err)
	}
	j := &journal{Path: p, f: os.NewFile(uintptr(fd), p)}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		j.f.Close()
		return nil, fmt.Errorf("journal %s: lock: %w", p, err)
	}
	j.killAt, _ = strconv.Atoi(os.Getenv(testKillAtEnv))
	self := selfOwner(command)
	if err := j.Write(JournalRecord{Kind: RecordRun, PID: self.PID, StartTicks: self.StartTicks, Started: time.Now().UTC(), Command: command}); err != nil {
		// A journal without its header (ENOSPC) names no run: it would
		// only be left behind, and refuse the next run on this root.
		j.f.Close()
		_ = unix.Unlinkat(dirfd, name, 0)
		return nil, err
	}
	j.sync()
	return j, nil
}

func (j *journal) Write(r JournalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if len(b) > maxJournalRecord {
		return fmt.Errorf("journal %s: a %s record of %d bytes, over the %d a record may have", j.Path, r.Kind, len(b), maxJournalRecord)
	}
	if j.steps++; j.steps == j.killAt {
		_ = unix.Kill(os.Getpid(), unix.SIGKILL)
		select {} // the signal is on its way
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.Path, err)
	}
	j.written.Add(1)
	return nil
}

// sync makes every record written so far durable. Volumes mounted side
// by side each wait for their own records only: one fdatasync covers
// all the records written before it started (group commit), so that
// `load` does not pay a sync per record in turn.
func (j *journal) sync() {
	if j == nil {
		return
	}
	want := j.written.Load()
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= want {
		return
	}
	upTo := j.written.Load()
	_ = unix.Fdatasync(int(j.f.Fd()))
	j.synced = upTo
}

// remove deletes the journal once everything it lists is gone, and the
// journal dir when no other run's journal is in it.
// Both are reached from the root dir's descriptor, and the journal is
// removed only while its name is still the file this run writes: a
// directory mounted over the journal dir since is refused, its files
// untouched.
func (j *journal) remove() error {
	defer j.f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(j.f.Fd()), &st); err != nil {
		return fmt.Errorf("journal %s: %w", j.Path, err)
	}
	root := filepath.Dir(filepath.Dir(j.Path))
	if err := RemoveInSimDir(root, filepath.Base(j.Path), &st); err != nil {
		return err
	}
	RemoveSimDir(root)
	return nil
}

func (j *journal) Close() { j.f.Close() }

// Journals lists the journals of earlier runs under root: runs that did not
// finish their teardown. A journal dir that is a symlink or a mount point
// is refused: the journal would be read from, and removed in, somewhere
// else.
func Journals(root string) ([]string, error) {
	dir := filepath.Join(root, JournalDir)
	fd, err := openJournalDir(root, false)
	if IsSymlinkRefused(err) {
		return nil, err
	}
	if err == nil {
		unix.Close(fd)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.journal"))
	if err != nil {
		return nil, err
	}
	return paths, nil
}

// JournalContents is what a journal says a run owns.
type JournalContents struct {
	header     JournalRecord
	Owned      map[string]string // path -> recordDir or recordFile
	order      []string          // owned paths, oldest first
	MountPaths map[string]bool
	VolData    map[string]map[string]string // dir -> the vol_data.json last written there
	// InFlight are the mount paths of driver calls announced and never
	// answered: the run died while the driver was in them.
	InFlight map[string]string // path -> method
}

// JournalRecordFits tells whether the vol_data.json record of data fits
// a journal line: a volume whose record would not is refused before
// anything of it is made, as `cleanup` could not read it back.
func JournalRecordFits(dir string, data map[string]string) error {
	b, err := json.Marshal(JournalRecord{Kind: RecordVolData, Path: dir, Data: data})
	if err != nil {
		return err
	}
	if len(b) > maxJournalRecord {
		return fmt.Errorf("its vol_data.json (volume handle of %d bytes) does not fit a journal record of at most 1 MiB, which `cleanup` needs to finish it after a crash; refused, nothing made", len(data["volumeHandle"]))
	}
	return nil
}

// openJournalFile opens a journal for reading without blocking on a FIFO
// named like one (nobody writes to it: the open would wait forever, deaf
// to signals, with the root dir's lock held) and refuses anything but a
// regular file.
func openJournalFile(p string) (*os.File, error) {
	fd, err := openOwnFile(unix.AT_FDCWD, p, p, unix.O_RDONLY, false)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// ReadJournal reads a journal. A torn last line (the process was killed
// mid-write) is an intent whose action never happened; a line over
// maxJournalRecord makes the journal damaged: refused.
func ReadJournal(p string) (*JournalContents, error) {
	f, err := openJournalFile(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jc, err := ParseJournal(f)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", p, err)
	}
	return jc, nil
}

// errRecordTooLong is a journal line over maxJournalRecord.
var errRecordTooLong = errors.New("too long")

// ParseJournal reads journal lines of up to maxJournalRecord bytes; a
// longer one is refused, read no further than the bound. The last line,
// when it has no newline, was torn by a kill during its write: its
// action was never taken (each is taken only once its record is written
// and synced whole), so it is dropped. A line that is not a record
// elsewhere is skipped: after a power loss the unsynced tail may hold any
// bytes, and every record taken is checked again (journalcheck.go).
func ParseJournal(r io.Reader) (*JournalContents, error) {
	jc := &JournalContents{Owned: map[string]string{}, MountPaths: map[string]bool{},
		VolData: map[string]map[string]string{}, InFlight: map[string]string{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readRecordLine(br)
		if errors.Is(err, errRecordTooLong) {
			return nil, fmt.Errorf("line %d is longer than 1 MiB, which no record the simulator writes is: the journal is damaged; refused, nothing done (move it away to start over, after checking by hand what it lists)", n)
		}
		if errors.Is(err, io.EOF) {
			return jc, nil // a torn last line, or none
		}
		if err != nil {
			return nil, err
		}
		jc.add(bytes.TrimSpace(line))
	}
}

// readRecordLine reads one line, newline included, holding at most
// maxJournalRecord+1 bytes of it. io.EOF: the line had no newline (it is
// returned too).
func readRecordLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxJournalRecord+1 {
			return nil, errRecordTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// JournalWriter tells whether the journal's writer still runs: another
// process holds its flock (the kernel drops it when the writer dies, kill
// -9 included, before the process is even reaped); the header names it.
func JournalWriter(p string) (LockOwner, bool) {
	f, err := openJournalFile(p)
	if err != nil {
		return LockOwner{}, false
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return LockOwner{}, false
	}
	live := false
	for _, pid := range flockHolders(st) {
		live = live || pid != os.Getpid()
	}
	if !live {
		return LockOwner{}, false
	}
	var header JournalRecord
	if line, err := readRecordLine(bufio.NewReader(f)); err == nil {
		_ = json.Unmarshal(line, &header)
	}
	return header.owner(), true
}

// add takes one journal line; one that is not a record is skipped.
func (jc *JournalContents) add(line []byte) {
	var r JournalRecord
	if len(line) == 0 || json.Unmarshal(line, &r) != nil {
		return
	}
	switch r.Kind {
	case RecordRun:
		jc.header = r
	case RecordDir, recordFile:
		if _, dup := jc.Owned[r.Path]; !dup {
			jc.order = append(jc.order, r.Path)
		}
		jc.Owned[r.Path] = r.Kind
	case recordMount:
		jc.MountPaths[r.Path] = true
	case RecordVolData:
		jc.VolData[r.Path] = r.Data
	case recordCall:
		jc.InFlight[r.Path] = r.Op
	case recordCalled:
		delete(jc.InFlight, r.Path)
	}
}

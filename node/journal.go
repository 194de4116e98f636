package node

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

// journalDir is where a run writes down, under the root dir, every path it
// creates, the moment it creates it. It is how the simulator knows what is
// its own: on a real node the root dir holds the kubelet's and other
// programs' files and mounts, which the simulator never touches. After a
// crash or kill -9, `cleanup` reads the journal to finish the run's
// teardown; a later `run` finds it and refuses to start over it.
const journalDir = ".csi-kubelet-sim"

// journal record kinds.
const (
	recordRun   = "run"   // the header: who wrote the journal
	recordDir   = "dir"   // a directory the simulator created
	recordFile  = "file"  // a file or symlink the simulator created
	recordMount = "mount" // a path that is or was a mount point (handed to the driver, or bind-mounted by the kubelet)
	// a copy of a vol_data.json the simulator wrote, with its directory:
	// `cleanup` rebuilds a volume from it when a failed operation took the
	// file itself away (see reconstructFromJournal).
	recordVolData = "voldata"
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

// journalRecord is one line of a journal.
type journalRecord struct {
	Kind       string            `json:"k"`
	Path       string            `json:"p,omitempty"`
	Op         string            `json:"op,omitempty"`
	PID        int               `json:"pid,omitempty"`
	StartTicks uint64            `json:"start_ticks,omitempty"`
	Started    time.Time         `json:"started,omitzero"`
	Command    string            `json:"cmd,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
}

// owner is the header's process, to tell whether it still runs.
func (r journalRecord) owner() LockOwner {
	return LockOwner{PID: r.PID, StartTicks: r.StartTicks, Started: r.Started, Command: r.Command}
}

// journal appends records to one file. Each line is written and synced
// before the action it announces: a killed process loses nothing, and a
// machine that loses power nothing that was acted on.
type journal struct {
	path    string
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
	p := filepath.Join(root, journalDir, name)
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", p, err)
	}
	j := &journal{path: p, f: os.NewFile(uintptr(fd), p)}
	j.killAt, _ = strconv.Atoi(os.Getenv(testKillAtEnv))
	self := selfOwner(command)
	if err := j.write(journalRecord{Kind: recordRun, PID: self.PID, StartTicks: self.StartTicks, Started: time.Now().UTC(), Command: command}); err != nil {
		// A journal without its header (ENOSPC) names no run: it would
		// only be left behind, and refuse the next run on this root.
		j.f.Close()
		_ = unix.Unlinkat(dirfd, name, 0)
		return nil, err
	}
	j.sync()
	return j, nil
}

func (j *journal) write(r journalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if j.steps++; j.steps == j.killAt {
		_ = unix.Kill(os.Getpid(), unix.SIGKILL)
		select {} // the signal is on its way
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
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
func (j *journal) remove() {
	j.f.Close()
	_ = os.Remove(j.path)
	_ = os.Remove(filepath.Dir(j.path))
}

func (j *journal) close() { j.f.Close() }

// Journals lists the journals of earlier runs under root: runs that did not
// finish their teardown. A journal dir that is a symlink is refused: the
// journal would be read from, and removed in, somewhere else.
func Journals(root string) ([]string, error) {
	dir := filepath.Join(root, journalDir)
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, &SymlinkError{Path: dir}
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.journal"))
	if err != nil {
		return nil, err
	}
	return paths, nil
}

// journalContents is what a journal says a run owns.
type journalContents struct {
	header     journalRecord
	owned      map[string]string // path -> recordDir or recordFile
	order      []string          // owned paths, oldest first
	mountPaths map[string]bool
	volData    map[string]map[string]string // dir -> the vol_data.json last written there
	// inFlight are the mount paths of driver calls announced and never
	// answered: the run died while the driver was in them.
	inFlight map[string]string // path -> method
}

// readJournal reads a journal; a torn last line (the process was killed
// mid-write) is ignored.
func readJournal(p string) (*journalContents, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseJournal(f)
}

// parseJournal reads journal lines of any length (a volume handle may be
// megabytes long): there is no line limit a valid run can hit.
func parseJournal(r io.Reader) (*journalContents, error) {
	jc := &journalContents{owned: map[string]string{}, mountPaths: map[string]bool{},
		volData: map[string]map[string]string{}, inFlight: map[string]string{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		jc.add(bytes.TrimSpace(line))
		if errors.Is(err, io.EOF) {
			return jc, nil
		}
		if err != nil {
			return jc, err
		}
	}
}

// add takes one journal line; one that is not a record is skipped.
func (jc *journalContents) add(line []byte) {
	var r journalRecord
	if len(line) == 0 || json.Unmarshal(line, &r) != nil {
		return
	}
	switch r.Kind {
	case recordRun:
		jc.header = r
	case recordDir, recordFile:
		if _, dup := jc.owned[r.Path]; !dup {
			jc.order = append(jc.order, r.Path)
		}
		jc.owned[r.Path] = r.Kind
	case recordMount:
		jc.mountPaths[r.Path] = true
	case recordVolData:
		jc.volData[r.Path] = r.Data
	case recordCall:
		jc.inFlight[r.Path] = r.Op
	case recordCalled:
		delete(jc.inFlight, r.Path)
	}
}

package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
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
)

// journalRecord is one line of a journal.
type journalRecord struct {
	Kind    string            `json:"k"`
	Path    string            `json:"p,omitempty"`
	PID     int               `json:"pid,omitempty"`
	Started time.Time         `json:"started,omitzero"`
	Command string            `json:"cmd,omitempty"`
	Data    map[string]string `json:"data,omitempty"`
}

// journal appends records to one file. Lines are written unbuffered: a
// killed process loses nothing the kernel has been given.
type journal struct {
	path string
	f    *os.File
}

func openJournal(root, command string) (*journal, error) {
	dir := filepath.Join(root, journalDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	name := fmt.Sprintf("run-%d-%d.journal", os.Getpid(), time.Now().UnixNano())
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &journal{path: p, f: f}
	if err := j.write(journalRecord{Kind: recordRun, PID: os.Getpid(), Started: time.Now().UTC(), Command: command}); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

func (j *journal) write(r journalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
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
// finish their teardown.
func Journals(root string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(root, journalDir, "*.journal"))
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
}

// readJournal reads a journal; a torn last line (the process was killed
// mid-write) is ignored.
func readJournal(p string) (*journalContents, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jc := &journalContents{owned: map[string]string{}, mountPaths: map[string]bool{}, volData: map[string]map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r journalRecord
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
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
		}
	}
	return jc, sc.Err()
}

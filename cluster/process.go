package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidFile is the helper's record in the control plane's dir, written (and
// synced) right after it started: after a kill -9 of the simulator,
// `cleanup` reads it to find a helper that outlived it (it should not:
// it has a parent-death signal) and stop it before removing the dir.
const pidFile = "helper.pid"

type pidRecord struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// process is the running helper, in a process group of its own (etcd is
// in it too): a terminal's Ctrl-C reaches the simulator only, which stops
// the helper in its teardown, after the driver is done with the API.
type process struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

func startProcess(bin string, args []string, logPath, dir string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	if err := writePID(dir, cmd.Process.Pid); err != nil {
		p.stop(0)
		return nil, err
	}
	return p, nil
}

func writePID(dir string, pid int) error {
	ticks, _ := startTicks(pid)
	b, _ := json.Marshal(pidRecord{PID: pid, StartTicks: ticks})
	f, err := os.OpenFile(filepath.Join(dir, pidFile), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("control plane record: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("control plane record: %w", err)
	}
	return f.Sync()
}

// stop sends SIGUSR1 (the helper kills etcd, reaps it and exits), then
// after grace kills what is left of the group, and waits until no process
// of the group is left.
func (p *process) stop(grace time.Duration) {
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGUSR1)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	killGroup(pid)
	<-p.exited
}

// killGroup kills what is left of the helper's process group (etcd, when
// the helper did not stop it) and waits up to 5 s for it to be gone.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastWords is the helper's last log line, for a start-up that failed.
func (p *process) lastWords() string {
	last := ""
	f, err := os.Open(p.log)
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				last = l
			}
		}
	}
	if last == "" {
		return fmt.Sprintf("the helper exited (%v)", p.err)
	}
	return fmt.Sprintf("the helper exited (%v): %s", p.err, last)
}

// startTicks is a process's start time from /proc/<pid>/stat (field 22):
// a reused PID has another. A zombie (dead, not yet reaped by its new
// parent) counts as gone.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, errors.New("bad stat")
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, errors.New("exited")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Leftover is a control plane a dead run left under a root dir.
type Leftover struct {
	Dir string
	PID int // 0: no helper recorded, or it is gone
}

// FindLeftover looks for a control plane under root.
func FindLeftover(root string) (*Leftover, error) {
	dir := Dir(root)
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory the simulator made; not touched", dir)
	}
	l := &Leftover{Dir: dir}
	var r pidRecord
	if b, err := os.ReadFile(filepath.Join(dir, pidFile)); err == nil && json.Unmarshal(b, &r) == nil && r.PID > 0 {
		if t, err := startTicks(r.PID); err == nil && (r.StartTicks == 0 || t == r.StartTicks) {
			l.PID = r.PID
		}
	}
	return l, nil
}

// Remove stops the leftover helper's process group, if alive, and removes
// the control plane's dir.
func (l *Leftover) Remove() error {
	if l.PID > 0 {
		_ = syscall.Kill(l.PID, syscall.SIGTERM)
		for i := 0; i < 100 && processAlive(l.PID); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		killGroup(l.PID)
	}
	if err := os.RemoveAll(l.Dir); err != nil {
		return fmt.Errorf("remove the control plane of an earlier run: %w", err)
	}
	return nil
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

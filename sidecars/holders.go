package sidecars

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultHoldersDir is the register of the volumes runs provisioned: one
// directory per volume, one entry file per live run that uses it, each
// flock'ed by its run for as long as the run lives. Root's is machine-wide
// (/run/csi-kubelet-sim/volumes); a user's is their own, under
// $XDG_RUNTIME_DIR or else the temp dir, since /run is root's: runs of
// one user against one driver still see each other.
//
// Two runs of the same manifests on two root dirs against one driver ask
// CreateVolume for the same name (the claims' UIDs are the input's), and
// CSI makes the driver answer both with one volume: the first run to end
// must not delete what the other still has mounted. Liveness is the flock
// alone (a run killed -9 drops it with its descriptors), never a PID.
func DefaultHoldersDir() string {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/csi-kubelet-sim/volumes"
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "csi-kubelet-sim", "volumes")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("csi-kubelet-sim-%d", uid), "volumes")
}

// holderSuffix ends the entry files.
const holderSuffix = ".holder"

// holderInfo is what an entry says about its run.
type holderInfo struct {
	RootDir string    `json:"root_dir"`
	PID     int       `json:"pid"`
	Driver  string    `json:"driver"`
	Name    string    `json:"name"`
	Since   time.Time `json:"since"`
}

// hold is this run's entry for one volume: its file, flock'ed.
type hold struct {
	dir string
	f   *os.File
}

// volumeDir is the register's directory of a volume: the driver, the
// controller socket it was reached on and the CreateVolume name, hashed
// (one driver on one socket answers one name with one volume).
func volumeDir(base, driver, endpoint, name string) string {
	sum := sha256.Sum256([]byte(driver + "\x00" + socketKey(endpoint) + "\x00" + name))
	return filepath.Join(base, hex.EncodeToString(sum[:16]))
}

// socketKey is the controller socket's real path, so that two spellings
// of one socket (a symlink, a doubled slash) name one driver.
func socketKey(endpoint string) string {
	if !strings.HasPrefix(endpoint, "/") {
		return endpoint
	}
	if real, err := filepath.EvalSymlinks(endpoint); err == nil {
		return real
	}
	return filepath.Clean(endpoint)
}

// plainDir makes dir (and its parents) 0700 and refuses it unless it and
// its parent are directories of this user's that no one else may write
// (not symlinks): in a shared temp dir another user could have made
// either first, to see or steer what the register deletes.
func plainDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := ownDir(d); err != nil {
			return err
		}
	}
	return nil
}

// ownDir refuses d unless it is a directory (not a symlink) owned by this
// user and not writable by group or others.
func ownDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a plain directory", d)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", d, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by others (mode %v)", d, fi.Mode().Perm())
	}
	return nil
}

// lockDir takes the volume directory's lock, made if need be. The lock
// file is checked, once locked, to be the one at its path still (a run
// that removed the directory meanwhile unlinked it): else it is taken
// again.
func lockDir(dir string) (*os.File, error) {
	for i := 0; i < 100; i++ {
		if err := plainDir(dir); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, "lock")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Lstat(p)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%s: its lock was replaced 100 times in a row", dir)
}

// holdVolume writes this run's entry for a volume about to be created,
// under the directory's lock (so that no other run deletes the volume
// between the entry and CreateVolume), and keeps it flock'ed.
func holdVolume(base, driver, endpoint, name, rootDir string) (*hold, error) {
	if base == NoHolders {
		return nil, nil
	}
	if err := plainDir(base); err != nil {
		return nil, fmt.Errorf("register of provisioned volumes: %w", err)
	}
	dir := volumeDir(base, driver, endpoint, name)
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("register of provisioned volumes: %w", err)
	}
	defer lock.Close()
	p := filepath.Join(dir, fmt.Sprintf("%d-%d%s", os.Getpid(), time.Now().UnixNano(), holderSuffix))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("register of provisioned volumes: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, fmt.Errorf("register of provisioned volumes: %s: %w", p, err)
	}
	b, _ := json.Marshal(holderInfo{RootDir: rootDir, PID: os.Getpid(), Driver: driver, Name: name, Since: time.Now().UTC()})
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, fmt.Errorf("register of provisioned volumes: %s: %w", p, err)
	}
	return &hold{dir: dir, f: f}, nil
}

// others takes the directory's lock and says which other live run holds
// the volume ("" for none), removing the entries of runs that are gone.
// unlock drops the lock and this run's entry: call it after DeleteVolume
// (or after deciding to keep the volume).
func (h *hold) others() (other string, unlock func(), err error) {
	own := ""
	if h.f != nil {
		own = h.f.Name()
	}
	return othersIn(h.dir, own, h.release)
}

// othersIn is others for the volume directory dir, own being the caller's
// entry ("" for none: `cleanup` of a run that is gone) and release what
// drops it.
func othersIn(dir, own string, release func()) (other string, unlock func(), err error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return "", func() {}, nil
	}
	lock, err := lockDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("register of provisioned volumes: %w", err)
	}
	unlock = func() {
		release()
		// The last one out removes the directory (under its lock, which
		// the next run sees replaced and takes again).
		if entries, _ := filepath.Glob(filepath.Join(dir, "*"+holderSuffix)); len(entries) == 0 {
			_ = os.Remove(filepath.Join(dir, "lock"))
			_ = os.Remove(dir)
		}
		lock.Close()
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*"+holderSuffix))
	if err != nil {
		unlock()
		return "", nil, err
	}
	for _, p := range entries {
		if p == own {
			continue
		}
		if root, live := liveHolder(p); live {
			return root, unlock, nil
		}
	}
	return "", unlock, nil
}

// liveHolder tells whether an entry's run still lives (it holds the
// entry's flock), with its root dir; the entry of a run that is gone is
// removed.
func liveHolder(p string) (string, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		var info holderInfo
		buf := make([]byte, 64<<10)
		n, _ := f.Read(buf)
		_ = json.Unmarshal([]byte(strings.TrimSpace(string(buf[:n]))), &info)
		if info.RootDir == "" {
			info.RootDir = "(unknown)"
		}
		return info.RootDir, true
	}
	_ = os.Remove(p)
	return "", false
}

// HeldElsewhere takes the register's lock of a volume and says which live
// run holds it ("" for none), for `cleanup` of a run that is gone; unlock
// after DeleteVolume.
func HeldElsewhere(base, driver, endpoint, name string) (other string, unlock func(), err error) {
	if base == NoHolders {
		return "", func() {}, nil
	}
	if base == "" {
		base = DefaultHoldersDir()
	}
	return othersIn(volumeDir(base, driver, endpoint, name), "", func() {})
}

// close drops this run's entry at its end (a volume kept, or deleted
// already), and the volume's directory with it when no other run has an
// entry there, under the directory's lock.
func (h *hold) close() {
	if h == nil || h.f == nil {
		return
	}
	if _, unlock, err := h.others(); err == nil {
		unlock()
		return
	}
	h.release()
}

// release removes this run's entry and drops its flock.
func (h *hold) release() {
	if h == nil || h.f == nil {
		return
	}
	_ = os.Remove(h.f.Name())
	h.f.Close()
	h.f = nil
}

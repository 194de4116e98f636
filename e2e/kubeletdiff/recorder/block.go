package recorder

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Block volumes, when Config.BlockDir is set: as a real driver does, the
// driver publishes a block device at the target of NodePublishVolume. Each
// volume is a small sparse image file in BlockDir attached to a loop
// device (losetup -f --show) at NodeStageVolume, or at its first
// NodePublishVolume if it is not staged; NodePublishVolume creates the
// target file and bind-mounts the loop device's node onto it;
// NodeUnpublishVolume unmounts it and removes the file; the loop device is
// detached (losetup -d) when the volume is neither staged nor published any
// more. Stop releases whatever is left.
//
// Without BlockDir the target is an empty regular file, which a kubelet
// cannot tear down (its volume path handler unmounts its bind mount of the
// target only when it is a device node).

// blockImageSize is the size of a volume's sparse image.
const blockImageSize = 1 << 20

// blockVolume is a volume with a loop device.
type blockVolume struct {
	image   string
	loop    string          // /dev/loopN
	staged  map[string]bool // staging target paths
	targets map[string]bool // target paths with the device bind-mounted on them
}

func (v *blockVolume) inUse() bool { return len(v.staged) > 0 || len(v.targets) > 0 }

// blockVolumeLocked returns volume id's loop device, attaching one (and
// making the image) if it has none.
func (r *Recorder) blockVolumeLocked(id string) (*blockVolume, error) {
	if v, ok := r.block[id]; ok {
		return v, nil
	}
	sum := sha256.Sum256([]byte(id))
	image := filepath.Join(r.cfg.BlockDir, fmt.Sprintf("%x.img", sum[:8]))
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(blockImageSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", image, err)
	}
	var out string
	// Another process may take the free device between losetup's lookup
	// and its attach: try again then.
	for attempt := 1; ; attempt++ {
		out, err = losetup("-f", "--show", image)
		if err == nil || attempt == 3 {
			break
		}
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/loop") {
		return nil, fmt.Errorf("losetup -f --show %s: unexpected output %q", image, out)
	}
	v := &blockVolume{image: image, loop: dev, staged: map[string]bool{}, targets: map[string]bool{}}
	r.block[id] = v
	return v, nil
}

// releaseBlockLocked detaches volume id's loop device if nothing uses it.
func (r *Recorder) releaseBlockLocked(id string) error {
	v, ok := r.block[id]
	if !ok || v.inUse() {
		return nil
	}
	if _, err := losetup("-d", v.loop); err != nil {
		return err
	}
	delete(r.block, id)
	return nil
}

// stageBlock is NodeStageVolume of a block volume.
func (r *Recorder) stageBlock(id, staging string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.blockVolumeLocked(id)
	if err != nil {
		return err
	}
	v.staged[staging] = true
	return nil
}

// unstageBlock is NodeUnstageVolume of a block volume (or of a volume the
// driver does not know: nothing to do).
func (r *Recorder) unstageBlock(id, staging string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.block[id]
	if !ok {
		return nil
	}
	delete(v.staged, staging)
	return r.releaseBlockLocked(id)
}

// publishBlock is NodePublishVolume of a block volume: the target file with
// the loop device's node bind-mounted on it.
func (r *Recorder) publishBlock(id, target string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.blockVolumeLocked(id)
	if err != nil {
		return err
	}
	if v.targets[target] {
		return nil // published already
	}
	created := false
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(target, nil, 0o640); err != nil {
			_ = r.releaseBlockLocked(id)
			return err
		}
		created = true
	}
	if err := syscall.Mount(v.loop, target, "", syscall.MS_BIND, ""); err != nil {
		if created {
			_ = os.Remove(target)
		}
		_ = r.releaseBlockLocked(id)
		return fmt.Errorf("bind-mount %s on %s: %w", v.loop, target, err)
	}
	v.targets[target] = true
	return nil
}

// unpublishBlock is NodeUnpublishVolume of a target where the driver
// mounted a block device: the mount goes, then the file. It reports
// whether the target was one.
func (r *Recorder) unpublishBlock(target string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, v := range r.block {
		if !v.targets[target] {
			continue
		}
		if err := syscall.Unmount(target, 0); err != nil {
			return true, fmt.Errorf("unmount %s: %w", target, err)
		}
		delete(v.targets, target)
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, err
		}
		return true, r.releaseBlockLocked(id)
	}
	return false, nil
}

// releaseAll unmounts the targets the driver still has a device mounted on
// and detaches its loop devices: what a teardown did not release. It
// returns what it released.
func (r *Recorder) releaseAll() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id, v := range r.block {
		for t := range v.targets {
			err := syscall.Unmount(t, 0)
			if errors.Is(err, syscall.EINVAL) {
				err = nil // unmounted by someone else
			}
			out = append(out, fmt.Sprintf("driver: %s still published at %s (unmounted: %v)", id, t, errOK(err)))
			delete(v.targets, t)
		}
		for s := range v.staged {
			out = append(out, fmt.Sprintf("driver: %s still staged at %s", id, s))
			delete(v.staged, s)
		}
		_, err := losetup("-d", v.loop)
		out = append(out, fmt.Sprintf("driver: loop device %s of %s detached: %v", v.loop, id, errOK(err)))
		delete(r.block, id)
	}
	return out
}

func errOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func losetup(args ...string) (string, error) {
	cmd := exec.Command("losetup", args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("losetup %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// Package looptest checks loop device teardowns beside other processes: a
// teardown may detach only its own devices, whatever another process
// attaches to the numbers it frees. Tests only; they need root and a
// private mount namespace (InPrivateMounts).
package looptest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Require skips the test, with the reason, where loop devices cannot be
// attached: not root, or no /dev/loop-control.
func Require(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: attaching loop devices needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("skipped: no loop devices here: %v", err)
	}
}

// inNamespaceEnv marks the re-executed test with its parent's mount
// namespace.
const inNamespaceEnv = "CSI_KUBELET_SIM_LOOPTEST_MNTNS"

// InPrivateMounts runs the calling test again (that test only) in a mount
// namespace of its own, `unshare -m --propagation private`, unless it
// already is the re-executed one, and reports the result. It returns true
// when the caller is the re-executed test and should go on.
func InPrivateMounts(t *testing.T) bool {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if parent := os.Getenv(inNamespaceEnv); parent != "" {
		if parent == self {
			t.Fatalf("%s: still in the parent's mount namespace %s", inNamespaceEnv, self)
		}
		return true
	}
	args := append([]string{"-m", "--propagation", "private", os.Args[0]}, os.Args[1:]...)
	args = append(args, "-test.run", "^"+t.Name()+"$")
	if f := flag.Lookup("test.v"); f == nil || f.Value.String() == "false" {
		args = append(args, "-test.v") // the child's own lines, for the parent's log
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), inNamespaceEnv+"="+self)
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test in its private mount namespace: %v", err)
	}
	return false
}

// Teardown is what the stress test exercises: attach puts a loop device on
// a file (returning the device's node), detach takes it off again.
type Teardown struct {
	Attach func(path string) (string, error)
	Detach func(path string) error
}

// foreign is a device the test attached to a number the teardown freed,
// held open by fd, as another process's block volume would be.
type foreign struct {
	name string
	fd   int
	ino  uint64
	dev  uint64
}

// Stress attaches n files of the test's own with td.Attach, then detaches
// them all at once with td.Detach while (a) a prober holds each of those
// devices open a moment in turn, as udev's blkid does after every change,
// and (b) another goroutine attaches a foreign file of the test's own to
// every one of those device numbers as soon as the kernel frees it. It
// checks that none of the foreign devices was detached (or marked to
// auto-clear) and that all of the teardown's own devices are gone, and
// returns how many foreign devices took a freed number. Every foreign
// device is released at the end through its own descriptor.
func Stress(t *testing.T, n int, td Teardown) int {
	t.Helper()
	// Short: the kernel keeps 63 bytes of a backing file's name.
	dir, err := os.MkdirTemp("", "looptest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	paths := make([]string, n)
	nums := map[string]bool{}
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("volume-%02d.img", i))
		mkFile(t, paths[i])
		dev, err := td.Attach(paths[i])
		if err != nil {
			t.Fatalf("attach %s: %v", paths[i], err)
		}
		nums[filepath.Base(dev)] = true
	}
	t.Cleanup(func() { leftovers(t, dir) })

	var (
		mu       sync.Mutex
		foreigns []foreign
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	t.Cleanup(func() {
		for _, f := range foreigns {
			release(t, f)
		}
	})
	names := make([]string, 0, len(nums))
	for name := range nums {
		names = append(names, name)
	}
	wg.Add(1)
	go func() { // the other process: a foreign file on every freed number
		defer wg.Done()
		taken := map[string]bool{}
		spare := newSpare(t, dir, 0)
		defer func() { unix.Close(spare.fd); os.Remove(spare.path) }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, name := range names {
				if taken[name] {
					continue
				}
				if f, ok := attachForeign(name, spare); ok {
					taken[name] = true
					mu.Lock()
					foreigns = append(foreigns, f)
					mu.Unlock()
					unix.Close(spare.fd)
					spare = newSpare(t, dir, len(taken))
				}
			}
		}
	}()
	var deferred atomic.Int32
	for i := range probers {
		wg.Add(1)
		go func() { // udev: each of the teardown's devices open a moment
			defer wg.Done()
			for {
				for j := i; j < len(names); j += probers {
					select {
					case <-stop:
						return
					default:
					}
					if probe(names[j], dir, 20*time.Millisecond) {
						deferred.Add(1)
					}
				}
			}
		}()
	}

	errs := make(chan error, n)
	var down sync.WaitGroup
	for _, p := range paths {
		down.Add(1)
		go func() {
			defer down.Done()
			if err := td.Detach(p); err != nil {
				errs <- fmt.Errorf("detach %s: %w", p, err)
			}
		}()
	}
	down.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for _, f := range foreigns {
		if why := foreignLost(f); why != "" {
			t.Errorf("the teardown detached another process's loop device: %s", why)
		}
	}
	if left := ours(t, dir); len(left) > 0 {
		t.Errorf("the teardown left its own loop devices attached: %s", strings.Join(left, ", "))
	}
	t.Logf("%d foreign devices took numbers the teardown freed; %d detaches were deferred by the prober's open", len(foreigns), deferred.Load())
	return len(foreigns)
}

// holdAfterDetach: how long DeferredThenReused keeps the device open
// after the teardown's detach.
const holdAfterDetach = 40 * time.Millisecond

// probers: how many devices are probed at once.
const probers = 5

func mkFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
}

// spare is the next foreign file, open.
type spare struct {
	path     string
	fd       int
	ino, dev uint64
}

func newSpare(t *testing.T, dir string, i int) spare {
	path := filepath.Join(dir, fmt.Sprintf("foreign-%02d", i))
	mkFile(t, path)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return spare{path: path, fd: fd, ino: st.Ino, dev: st.Dev}
}

// attachForeign attaches file s to loop device name if it is free
// (LOOP_CONFIGURE fails with EBUSY on a bound device and leaves it as it
// is). The device stays open, so that its binding cannot change unseen.
func attachForeign(name string, s spare) (foreign, bool) {
	if b, err := os.ReadFile("/sys/block/" + name + "/loop/backing_file"); err == nil && len(b) > 0 {
		return foreign{}, false // bound: not worth an open
	}
	fd, err := unix.Open("/dev/"+name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return foreign{}, false
	}
	var cfg unix.LoopConfig
	cfg.Fd = uint32(s.fd)
	copy(cfg.Info.File_name[:63], s.path)
	if err := unix.IoctlLoopConfigure(fd, &cfg); err != nil {
		unix.Close(fd)
		return foreign{}, false
	}
	return foreign{name: name, fd: fd, ino: s.ino, dev: s.dev}, true
}

// probe holds loop device name open for d if it is one of the test's own
// (its backing file is in dir), as udev's probe after a change does.
// deferred tells whether a detach came meanwhile (and waits for the close).
func probe(name, dir string, d time.Duration) (deferred bool) {
	fd, err := unix.Open("/dev/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err != nil || !strings.HasPrefix(cString(info.File_name[:]), dir+"/volume-") {
		return false
	}
	time.Sleep(d)
	info, err = unix.IoctlLoopGetStatus64(fd)
	return err == nil && info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0
}

// foreignLost says how foreign device f was touched, "" if it was not.
func foreignLost(f foreign) string {
	info, err := unix.IoctlLoopGetStatus64(f.fd)
	switch {
	case errors.Is(err, unix.ENXIO):
		return fmt.Sprintf("/dev/%s (foreign) is no longer attached", f.name)
	case err != nil:
		return fmt.Sprintf("/dev/%s (foreign): LOOP_GET_STATUS64: %v", f.name, err)
	case info.Inode != f.ino || info.Device != f.dev:
		return fmt.Sprintf("/dev/%s (foreign) is backed by inode %d, not %d", f.name, info.Inode, f.ino)
	case info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0:
		return fmt.Sprintf("/dev/%s (foreign) was detached (marked to auto-clear on its last close)", f.name)
	}
	return ""
}

// release detaches foreign device f through its own descriptor, if it is
// still backed by the test's file.
func release(t *testing.T, f foreign) {
	defer unix.Close(f.fd)
	info, err := unix.IoctlLoopGetStatus64(f.fd)
	if err != nil || info.Inode != f.ino || info.Device != f.dev {
		return
	}
	if err := unix.IoctlSetInt(f.fd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Errorf("release /dev/%s (foreign): %v", f.name, err)
	}
}

// ours lists the loop devices whose backing file is in dir.
func ours(t *testing.T, dir string) []string {
	dirs, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(string(b))
		if strings.HasPrefix(backing, dir+"/volume-") {
			out = append(out, filepath.Base(d)+" ("+backing+")")
		}
	}
	return out
}

// leftovers detaches what a failed test left of its own devices, each
// checked on its descriptor.
func leftovers(t *testing.T, dir string) {
	dirs, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range dirs {
		name := filepath.Base(d)
		if _, err := strconv.Atoi(strings.TrimPrefix(name, "loop")); err != nil {
			continue
		}
		fd, err := unix.Open("/dev/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		if err == nil && strings.HasPrefix(cString(info.File_name[:]), dir+"/volume-") {
			t.Errorf("cleanup: /dev/%s left attached to %s", name, cString(info.File_name[:]))
			unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
		}
		unix.Close(fd)
	}
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// DeferredThenReused is the window Stress hits by chance, made certain: the
// test holds the teardown's device open (as a udev probe) until the
// teardown has asked the kernel to detach it (the kernel then only marks it
// to auto-clear on the last close) and a moment longer, closes it, which
// frees the device, and at once attaches a foreign file of its own to the same number. The
// teardown's next look must leave that device alone. It returns false (and
// logs why) when the number went to another process first, so that the
// window could not be set up.
func DeferredThenReused(t *testing.T, td Teardown) bool {
	t.Helper()
	dir, err := os.MkdirTemp("", "looptest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(func() { leftovers(t, dir) })
	path := filepath.Join(dir, "volume-00.img")
	mkFile(t, path)
	dev, err := td.Attach(path)
	if err != nil {
		t.Fatalf("attach %s: %v", path, err)
	}
	name := filepath.Base(dev)
	hold, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- td.Detach(path) }()
	// Until the teardown's detach is deferred.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		info, err := unix.IoctlLoopGetStatus64(hold)
		if err != nil {
			unix.Close(hold)
			t.Fatalf("%s: LOOP_GET_STATUS64: %v", dev, err)
		}
		if info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0 {
			break
		}
		if time.Now().After(deadline) {
			unix.Close(hold)
			t.Fatalf("the teardown never detached %s", dev)
		}
	}
	s := newSpare(t, dir, 0)
	defer unix.Close(s.fd)
	// A moment more, for the teardown to see its device still attached
	// and wait before its next try (the old simulator waited 100 ms).
	time.Sleep(holdAfterDetach)
	unix.Close(hold) // the last close: the kernel frees the number
	var f foreign
	ok := false
	for range 1000 {
		if f, ok = attachForeign(name, s); ok {
			break
		}
		if b, err := os.ReadFile("/sys/block/" + name + "/loop/backing_file"); err == nil && len(b) > 0 && !strings.HasPrefix(string(b), path) {
			break // another process's now
		}
	}
	if err := <-done; err != nil {
		t.Errorf("detach %s: %v", path, err)
	}
	if !ok {
		t.Logf("%s went to another process before the test could take it", dev)
		return false
	}
	defer release(t, f)
	if why := foreignLost(f); why != "" {
		t.Errorf("the teardown detached another process's loop device: %s", why)
	}
	if left := ours(t, dir); len(left) > 0 {
		t.Errorf("the teardown left its own loop device attached: %s", strings.Join(left, ", "))
	}
	return true
}

// Swap is another process taking a number between a teardown's look-up and
// its act: it detaches loop device name, which must be backed by path (the
// test's own file), through its own descriptor, and at once attaches a new
// foreign file of the test's to the same number. The returned check says
// how the foreign device was touched since ("" if it was not) and releases
// it. ok is false (and logged) when another process took the number first.
func Swap(t *testing.T, name, path string) (check func() string, ok bool) {
	t.Helper()
	fd, err := unix.Open("/dev/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err != nil || cString(info.File_name[:]) != path {
		unix.Close(fd)
		t.Fatalf("/dev/%s is not the test's device on %s: %v", name, path, err)
	}
	if err := unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	s := newSpare(t, filepath.Dir(path), 99)
	defer unix.Close(s.fd)
	for range 1000 {
		if f, ok := attachForeign(name, s); ok {
			return func() string { defer release(t, f); return foreignLost(f) }, true
		}
		if b, err := os.ReadFile("/sys/block/" + name + "/loop/backing_file"); err == nil && len(b) > 0 && !strings.HasPrefix(string(b), path) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("/dev/%s went to another process before the test could take it", name)
	return nil, false
}

// Package loopdev attaches and detaches loop devices beside other processes.
//
// Loop devices are machine-wide: the number one process frees is taken by
// the next `losetup -f` anywhere on the machine (another pod's block volume
// on a node, another test on a CI runner). So a device is known here by its
// backing file, checked on an open descriptor of the device node, and it is
// detached through that same descriptor; never by a name looked up earlier.
// While a descriptor of the device is open the kernel cannot unbind it: a
// LOOP_CLR_FD from anyone, and an auto-clear, only take effect on the last
// close. What is checked on the descriptor therefore stays true until it is
// closed, and LOOP_CLR_FD on it clears the device that was checked.
//
// The kubelet's volumepathhandler runs `losetup -f --show` and `losetup -d
// <device>`; the effect on the kernel is the same (LOOP_CONFIGURE,
// LOOP_CLR_FD), without the window between losetup's look-up and its act.
package loopdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Backing identifies a backing file: its canonical path and the device and
// inode of the file. The path alone is not enough (sysfs prints it as the
// reader sees it, the kernel's own copy keeps 63 bytes, and a path can name
// another file later); the inode alone is not either (two bind mounts of one
// device node, one per pod, are two backing files with one inode).
type Backing struct {
	Path     string
	Dev, Ino uint64
}

// Identify returns the Backing of the file at path: symlinks resolved, as
// losetup and sysfs show it.
func Identify(path string) (Backing, error) {
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Backing{}, err
	}
	canon, err = filepath.Abs(canon)
	if err != nil {
		return Backing{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat(canon, &st); err != nil {
		return Backing{}, &os.PathError{Op: "stat", Path: canon, Err: err}
	}
	return Backing{Path: canon, Dev: st.Dev, Ino: st.Ino}, nil
}

// deletedSuffix ends sysfs's backing_file when the file was removed.
const deletedSuffix = " (deleted)"

// Status is what an attached loop device says about itself, read on an open
// descriptor of its node (and sysfs's backing_file of the same device,
// read while the descriptor held it).
type Status struct {
	Name        string // "loop3"
	Rdev        uint64 // the device number of the node
	BackingPath string // sysfs backing_file: the full path, " (deleted)" when removed
	FileName    string // lo_file_name: the first 63 bytes of the path the attacher gave
	Dev, Ino    uint64 // of the backing file
	ReadOnly    bool
	Autoclear   bool // detached while open: it goes on its last close
}

// Path is the device node.
func (s Status) Path() string { return "/dev/" + s.Name }

// Deleted tells whether the backing file was removed.
func (s Status) Deleted() bool { return strings.HasSuffix(s.BackingPath, deletedSuffix) }

// Is tells whether the device's backing file is b: the same file (device
// and inode) by the same path (sysfs's full path, and the kernel's 63-byte
// copy of the attacher's).
func (s Status) Is(b Backing) bool {
	return s.Dev == b.Dev && s.Ino == b.Ino && s.BackingPath == b.Path && strings.HasPrefix(b.Path, s.FileName)
}

func (s Status) String() string {
	if s.ReadOnly {
		return s.Path() + " (ro)"
	}
	return s.Path()
}

// sysBlock lists the block devices.
const sysBlock = "/sys/block"

// sysfsBacking reads the backing file of loop device name from sysfs. ok is
// false when the device is not attached (or not there): the kernel answers
// ENOENT, ENODEV or ENXIO, or an empty file while it clears the device.
func sysfsBacking(name string) (backing string, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(sysBlock, name, "loop", "backing_file"))
	if gone(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	backing = strings.TrimRight(string(b), "\n")
	return backing, backing != "", nil
}

// gone tells whether err means that the device is not (or no longer)
// attached, or not there at all.
func gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO)
}

// candidates lists the loop devices whose sysfs backing_file want accepts:
// names to open and check, nothing more.
func candidates(want func(backing string) bool) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(sysBlock, "loop*"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		backing, ok, err := sysfsBacking(name)
		if err != nil {
			return nil, fmt.Errorf("loop device %s: %w", name, err)
		}
		if ok && want(backing) {
			names = append(names, name)
		}
	}
	return names, nil
}

// device is an open loop device node.
type device struct {
	fd int
	Status
}

func (d *device) close() { unix.Close(d.fd) }

// open opens the node of loop device name and reads its status on the
// descriptor. ok is false when the device is not attached.
func open(name string) (d *device, ok bool, err error) {
	fd, err := unix.Open("/dev/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if gone(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: "/dev/" + name, Err: err}
	}
	d = &device{fd: fd}
	ok, err = d.read()
	if err != nil || !ok {
		d.close()
		return nil, ok, err
	}
	if d.Name != name {
		// A node named after another device: not what sysfs listed.
		d.close()
		return nil, false, nil
	}
	return d, true, nil
}

// read fills the status from the descriptor; ok is false when the device
// is not attached.
func (d *device) read() (ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return false, fmt.Errorf("fstat loop device: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return false, fmt.Errorf("%s is not a block device", d.Path())
	}
	info, err := unix.IoctlLoopGetStatus64(d.fd)
	if gone(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("LOOP_GET_STATUS64: %w", err)
	}
	s := Status{
		Name:      "loop" + strconv.FormatUint(uint64(info.Number), 10),
		Rdev:      st.Rdev,
		FileName:  cString(info.File_name[:]),
		Dev:       info.Device,
		Ino:       info.Inode,
		ReadOnly:  info.Flags&unix.LO_FLAGS_READ_ONLY != 0,
		Autoclear: info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0,
	}
	// The descriptor holds the device bound, so sysfs shows the same file.
	backing, ok, err := sysfsBacking(s.Name)
	if err != nil || !ok {
		return false, err
	}
	s.BackingPath = backing
	d.Status = s
	return true, nil
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Find lists the attached loop devices whose backing file is b.
func Find(b Backing) ([]Status, error) {
	return List(func(backing string) bool { return backing == b.Path }, func(s Status) bool { return s.Is(b) })
}

// List lists the attached loop devices that match accepts, as read on a
// descriptor of each; candidate picks the devices worth opening by sysfs's
// backing_file (nothing else is opened: an open delays another process's
// detach of its own device).
func List(candidate func(backing string) bool, match func(Status) bool) ([]Status, error) {
	names, err := candidates(candidate)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, name := range names {
		d, ok, err := open(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if match(d.Status) {
			out = append(out, d.Status)
		}
		d.close()
	}
	return out, nil
}

// Attach attaches the file at path to a free loop device (LOOP_CTL_GET_FREE,
// then LOOP_CONFIGURE on a descriptor of that device, which fails if another
// process took it meanwhile: then the next free one) and checks on the same
// descriptor that the device is backed by the file it opened.
func Attach(path string, readOnly bool) (Status, error) {
	b, err := Identify(path)
	if err != nil {
		return Status{}, err
	}
	mode := unix.O_RDWR
	if readOnly {
		mode = unix.O_RDONLY
	}
	file, err := unix.Open(b.Path, mode|unix.O_CLOEXEC, 0)
	if err != nil {
		return Status{}, &os.PathError{Op: "open", Path: b.Path, Err: err}
	}
	defer unix.Close(file)
	var st unix.Stat_t
	if err := unix.Fstat(file, &st); err != nil {
		return Status{}, fmt.Errorf("fstat %s: %w", b.Path, err)
	}
	// What is attached is the file opened; the path may name another by now.
	b.Dev, b.Ino = st.Dev, st.Ino
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return Status{}, &os.PathError{Op: "open", Path: "/dev/loop-control", Err: err}
	}
	defer unix.Close(ctl)
	var last error
	for range attachTries {
		s, err := attachFree(ctl, file, b, readOnly)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errRace) {
			return Status{}, err
		}
		last = err
		time.Sleep(10 * time.Millisecond)
	}
	return Status{}, fmt.Errorf("attach %s to a loop device: %d tries: %w", b.Path, attachTries, last)
}

// attachTries bounds the attach attempts that lose a device to another
// process between LOOP_CTL_GET_FREE and LOOP_CONFIGURE.
const attachTries = 20

// errRace: another process took the free device first, or its node is not
// there yet; the next try may do.
var errRace = errors.New("try again")

// attachFree attaches file (b) to the device LOOP_CTL_GET_FREE names.
func attachFree(ctl, file int, b Backing, readOnly bool) (Status, error) {
	n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
	if err != nil {
		return Status{}, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
	}
	name := "loop" + strconv.Itoa(n)
	mode := unix.O_RDWR
	if readOnly {
		mode = unix.O_RDONLY
	}
	fd, err := unix.Open("/dev/"+name, mode|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		// devtmpfs makes the node of a new device a moment later.
		return Status{}, fmt.Errorf("%w: /dev/%s does not exist (devtmpfs makes it a moment after LOOP_CTL_GET_FREE; a /dev without devtmpfs never)", errRace, name)
	}
	if err != nil {
		return Status{}, &os.PathError{Op: "open", Path: "/dev/" + name, Err: err}
	}
	d := &device{fd: fd}
	defer d.close()
	var cfg unix.LoopConfig
	cfg.Fd = uint32(file)
	if readOnly {
		cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY
	}
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], b.Path)
	err = unix.IoctlLoopConfigure(fd, &cfg)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
		err = setFD(fd, file, &cfg.Info) // before Linux 5.8
	}
	if errors.Is(err, unix.EBUSY) {
		return Status{}, fmt.Errorf("%w: another process took %s first", errRace, name)
	}
	if err != nil {
		return Status{}, fmt.Errorf("attach %s to %s: %w", b.Path, name, err)
	}
	ok, err := d.read()
	if err != nil {
		return Status{}, fmt.Errorf("attached %s to %s: %w", b.Path, name, err)
	}
	if !ok || !d.Is(b) {
		// Cannot be while the descriptor is open; never clear what is not
		// known to be ours.
		return Status{}, fmt.Errorf("attached %s to %s, but the device shows backing file %q (inode %d)", b.Path, name, d.BackingPath, d.Ino)
	}
	return d.Status, nil
}

// setFD is LOOP_CONFIGURE as kernels before 5.8 do it: LOOP_SET_FD, then
// the name and flags with LOOP_SET_STATUS64.
func setFD(fd, file int, info *unix.LoopInfo64) error {
	if err := unix.IoctlSetInt(fd, unix.LOOP_SET_FD, file); err != nil {
		return err
	}
	return unix.IoctlLoopSetStatus64(fd, info)
}

// DetachOptions bound Detach's tries.
type DetachOptions struct {
	// Tries and Wait: how often Detach looks again for a device that another
	// opener keeps bound (the kernel then only marks it to auto-clear on its
	// last close), and how long apart.
	Tries int
	Wait  time.Duration
	// BeforeClear, when set, runs between a device's look-up in sysfs and its
	// open (tests: another process reuses the device in that window).
	BeforeClear func(name string)
}

// Detach detaches every loop device whose backing file is b and waits
// until none is left, for opt.Tries looks. It returns those still attached
// then (each marked to auto-clear on its last close).
func Detach(b Backing, opt DetachOptions) ([]Status, error) {
	return DetachMatching(func(backing string) bool { return backing == b.Path }, func(s Status) bool { return s.Is(b) }, opt)
}

// DetachMatching is Detach for the devices that match accepts (candidate:
// by sysfs's backing_file, as List). Before every try it finds the devices
// again; each is opened, checked on its descriptor and cleared (LOOP_CLR_FD)
// through that descriptor.
func DetachMatching(candidate func(backing string) bool, match func(Status) bool, opt DetachOptions) ([]Status, error) {
	tries := max(opt.Tries, 1)
	for try := 1; ; try++ {
		names, err := candidates(candidate)
		if err != nil {
			return nil, err
		}
		var left []Status
		for _, name := range names {
			if opt.BeforeClear != nil {
				opt.BeforeClear(name)
			}
			s, cleared, err := clearIf(name, match)
			if err != nil {
				return nil, err
			}
			if cleared {
				left = append(left, s)
			}
		}
		if len(left) == 0 {
			return nil, nil
		}
		// Cleared on our close unless another opener holds it: look again.
		left, err = List(candidate, match)
		if err != nil || len(left) == 0 || try >= tries {
			return left, err
		}
		time.Sleep(opt.Wait)
	}
}

// clearIf opens loop device name and, if match accepts what its descriptor
// says, clears it through that descriptor. cleared tells whether it did.
func clearIf(name string, match func(Status) bool) (s Status, cleared bool, err error) {
	d, ok, err := open(name)
	if err != nil || !ok {
		return Status{}, false, err
	}
	defer d.close()
	if !match(d.Status) {
		return d.Status, false, nil
	}
	err = unix.IoctlSetInt(d.fd, unix.LOOP_CLR_FD, 0)
	switch {
	case err == nil, errors.Is(err, unix.EBUSY):
		// EBUSY (old kernels): in use by another opener; found again
		// and tried again, as the deferred clear of newer kernels.
		return d.Status, true, nil
	case gone(err):
		return d.Status, false, nil
	}
	return d.Status, false, fmt.Errorf("LOOP_CLR_FD %s: %w", d.Path(), err)
}

// Same tells whether o is the device s was: the same number backed by the
// same file (device, inode and path, removed since or not), with the same
// read-only-ness. Two devices of one file differ by number.
func (s Status) Same(o Status) bool {
	return s.Name == o.Name && s.Dev == o.Dev && s.Ino == o.Ino && s.ReadOnly == o.ReadOnly &&
		strings.TrimSuffix(s.BackingPath, deletedSuffix) == strings.TrimSuffix(o.BackingPath, deletedSuffix)
}

// DetachDevice detaches device s, found earlier, if it still is s (Same, on
// its descriptor), and waits as Detach.
func DetachDevice(s Status, opt DetachOptions) ([]Status, error) {
	path := strings.TrimSuffix(s.BackingPath, deletedSuffix)
	return DetachMatching(func(b string) bool { return strings.TrimSuffix(b, deletedSuffix) == path }, s.Same, opt)
}

// SetCapacity makes device s, found earlier, take the size of its backing
// file again (LOOP_SET_CAPACITY, `losetup -c`), if it still is s.
func SetCapacity(s Status) error {
	d, ok, err := open(s.Name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is no longer attached", s.Path())
	}
	defer d.close()
	if !s.Same(d.Status) {
		return fmt.Errorf("%s is no longer backed by %s (now %s)", s.Path(), s.BackingPath, d.BackingPath)
	}
	if err := unix.IoctlSetInt(d.fd, unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("LOOP_SET_CAPACITY %s: %w", s.Path(), err)
	}
	return nil
}

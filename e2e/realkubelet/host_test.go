package realkubelet

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// inNamespaceEnv marks the test binary re-executed in a mount namespace of
// its own; it holds the parent's namespace, which the child's must not be.
const inNamespaceEnv = "REALKUBELET_IN_NAMESPACE"

// kernelSettings are the host-wide sysctls the kubelet's container manager
// writes unless they already hold these values. Files with these values are
// bind-mounted over them inside the test's mount namespace, so the kubelet
// finds them set and the host keeps its own.
var kernelSettings = map[string]string{
	"vm/overcommit_memory": "1",
	"kernel/panic":         "10",
	"kernel/panic_on_oops": "1",
}

// writtenOutside are the paths outside its root dir a kubelet writes
// (device-plugins socket, container log dirs, the flexvolume dir) and other
// places a node component could: none may appear on the host.
var writtenOutside = []string{
	"/var/lib/kubelet", "/var/lib/etcd", "/var/log/containers", "/var/log/pods",
	"/usr/libexec/kubernetes", "/etc/kubernetes", "/etc/cni", "/opt/cni",
}

// reexecInNamespace runs this test again as root under `unshare -m
// --propagation private` (unless it already is there) and reports its
// result; it returns false when the caller is the re-executed test.
func reexecInNamespace(t *testing.T) bool {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if parent := os.Getenv(inNamespaceEnv); parent != "" {
		if parent == self {
			t.Fatalf("%s: the mount namespace is still the parent's, %s", inNamespaceEnv, self)
		}
		return false
	}
	if os.Geteuid() != 0 {
		t.Fatalf("TestRealKubelet needs root (bind mounts over /var/lib, /var/log and /proc/sys entries in a mount namespace of its own)")
	}
	// This test only (the last -test.run wins): the others re-execute themselves.
	args := append([]string{"-m", "--propagation", "private", os.Args[0]}, os.Args[1:]...)
	args = append(args, "-test.run", childRunPattern(t.Name()))
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), inNamespaceEnv+"="+self)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the test in its mount namespace: %v", err)
	}
	return true
}

// childRunPattern selects test name only, and the subtests the parent's
// -test.run selects (what follows its first slash).
func childRunPattern(name string) string {
	p := "^" + name + "$"
	if f := flag.Lookup("test.run"); f != nil {
		if _, sub, ok := strings.Cut(f.Value.String(), "/"); ok {
			p += "/" + sub
		}
	}
	return p
}

// hostState is what the test must leave as it found it.
type hostState struct {
	sysctls map[string]string
	exists  map[string]bool
}

func readHostState() (hostState, error) {
	s := hostState{sysctls: map[string]string{}, exists: map[string]bool{}}
	for k := range kernelSettings {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return s, err
		}
		s.sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, p := range writtenOutside {
		_, err := os.Lstat(p)
		s.exists[p] = err == nil
	}
	return s, nil
}

// diff lists what changed from s to now.
func (s hostState) diff(now hostState) []string {
	var out []string
	for k, v := range s.sysctls {
		if now.sysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s: was %s, is %s", k, v, now.sysctls[k]))
		}
	}
	for p, e := range s.exists {
		if now.exists[p] != e {
			out = append(out, fmt.Sprintf("%s: existed %v, exists %v", p, e, now.exists[p]))
		}
	}
	return out
}

// protectHost bind-mounts temp dirs over the places the kubelet writes
// outside its root dir and the kernel settings' files over /proc/sys,
// inside this mount namespace; the cleanup unmounts them and checks the
// host is as it was.
func protectHost(t *testing.T, base string) {
	before, err := readHostState()
	if err != nil {
		t.Fatal(err)
	}
	var mounts []string
	bind := func(src, dst string) {
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s over %s: %v", src, dst, err)
		}
		mounts = append(mounts, dst)
	}
	t.Cleanup(func() {
		// What the kubelet mounted under its root dir (tmpfs of projected
		// volumes, the driver's block targets) it must have unmounted at
		// the pods' teardown; the lazy unmount below would hide it.
		for _, m := range mountsUnder(kubeletRoot) {
			t.Errorf("left mounted under the kubelet's root dir: %s", m)
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			// Detached lazily, with whatever is mounted under it, all inside
			// this mount namespace.
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", mounts[i], err)
			}
		}
		after, err := readHostState()
		if err != nil {
			t.Error(err)
			return
		}
		for _, d := range before.diff(after) {
			t.Errorf("the host changed: %s", d)
		}
	})
	// /var/lib/kubelet does not exist on a host without a kubelet, and
	// making it would write outside: then the whole /var/lib is covered.
	varLib := "/var/lib/kubelet"
	if !before.exists[varLib] {
		varLib = "/var/lib"
	}
	for _, dst := range []string{varLib, "/var/log"} {
		src := filepath.Join(base, "host", strings.ReplaceAll(strings.Trim(dst, "/"), "/", "_"))
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		bind(src, dst)
	}
	for k, v := range kernelSettings {
		src := filepath.Join(base, "sysctl", strings.ReplaceAll(k, "/", "."))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		bind(src, "/proc/sys/"+k)
	}
}

// mountsUnder lists the mount points under dir (not dir itself).
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"mountinfo: " + err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// loopsUnder lists the loop devices whose backing file is under one of
// dirs, as "/dev/loopN backing-file".
func loopsUnder(dirs ...string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(string(b))
		for _, d := range dirs {
			if strings.HasPrefix(backing, d+"/") {
				dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(f)))
				out = append(out, dev+" "+backing)
				break
			}
		}
	}
	return out
}

// releaseLoops detaches the loop devices over files under base (the
// recording drivers' images; loop devices are host-wide) and reports every
// loop device left over the test's files.
func releaseLoops(t *testing.T, base string) {
	for _, l := range loopsUnder(base, kubeletRoot) {
		t.Errorf("loop device left attached: %s", l)
		dev, backing, _ := strings.Cut(l, " ")
		if strings.HasPrefix(backing, base+"/") {
			if err := detachLoop(dev); err != nil {
				t.Error(err)
			}
		}
	}
}

func detachLoop(dev string) error {
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -d %s: %v: %s", dev, err, out)
	}
	return nil
}

// releaseUnder detaches the loop devices over files under dir, then
// unmounts the mounts under it, the deepest first: what a teardown that
// never completed left there (a kubelet's over its bind mounts of block
// targets).
func releaseUnder(t *testing.T, dir string) {
	for _, l := range loopsUnder(dir) {
		dev, _, _ := strings.Cut(l, " ")
		if err := detachLoop(dev); err != nil {
			t.Error(err)
		}
	}
	mounts := mountsUnder(dir)
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m, err)
		}
	}
}

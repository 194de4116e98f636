package kubeletdiff

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The host state a case makes under its temporary directory: loop devices
// (the driver's, over its images; the kubelet's and the simulator's, over
// their map files) and mounts (the driver's targets, the kubelet's map
// files). Nothing of it may outlive the case.

// loopsUnder lists the attached loop devices whose backing file is under
// dir, as "/dev/loopN (backing file)".
func loopsUnder(dir string) []string {
	dirs := prefixes(dir)
	var out []string
	devs, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range devs {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		backing := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(b)), "(deleted)"))
		if under(backing, dirs) {
			out = append(out, "/dev/"+filepath.Base(d)+" ("+backing+")")
		}
	}
	return out
}

// mountsUnder lists the mount points under dir, in the order of
// /proc/self/mountinfo (the later ones over the earlier ones).
func mountsUnder(dir string) []string {
	dirs := prefixes(dir)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		if p := unescapeMountinfo(f[4]); under(p, dirs) {
			out = append(out, p)
		}
	}
	return out
}

func prefixes(dir string) []string {
	dirs := []string{filepath.Clean(dir)}
	if r, err := filepath.EvalSymlinks(dir); err == nil && r != dirs[0] {
		dirs = append(dirs, r)
	}
	return dirs
}

func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// releaseHost detaches the loop devices backed by files under dir, then
// unmounts what is mounted under dir (the latest mount first), until
// nothing is left or it gives up. It returns what it released and what it
// could not.
func releaseHost(dir string) (released, left []string) {
	for round := 0; round < 5; round++ {
		loops, mounts := loopsUnder(dir), mountsUnder(dir)
		if len(loops) == 0 && len(mounts) == 0 {
			return released, nil
		}
		for _, l := range loops {
			dev, _, _ := strings.Cut(l, " ")
			if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
				released = append(released, fmt.Sprintf("loop device %s: losetup -d: %v: %s", l, err, strings.TrimSpace(string(out))))
			} else {
				released = append(released, "loop device "+l)
			}
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounts[i], 0); err != nil {
				released = append(released, fmt.Sprintf("mount %s: unmount: %v", mounts[i], err))
			} else {
				released = append(released, "mount "+mounts[i])
			}
		}
		// A loop device detached while open goes when it is closed.
		time.Sleep(time.Duration(round+1) * 50 * time.Millisecond)
	}
	return released, append(loopsUnder(dir), mountsUnder(dir)...)
}

// checkHost is the cleanup of a case: whatever is still attached or
// mounted under dir is released, and the case fails.
func checkHost(t *testing.T, dir string) {
	released, left := releaseHost(dir)
	if len(released) > 0 {
		t.Errorf("left behind on the host at the end of the case (the harness released it):\n  %s", strings.Join(released, "\n  "))
	}
	if len(left) > 0 {
		t.Errorf("still on the host after the case, could not release:\n  %s", strings.Join(left, "\n  "))
	}
}

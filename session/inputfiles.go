package session

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// filesFrom is the files a command reads: its -f flags, then its
// positional arguments.
func filesFrom(flags, args []string) []string {
	return append(append([]string(nil), flags...), args...)
}

// judgeInput refuses an input that was given but holds no object the
// kubelet reads: an empty file, or only kinds it skips (each skipped one
// was warned about as it was read).
func judgeInput(c *manifests.Cluster, files []string) error {
	if len(files) == 0 || c.Count() > 0 {
		return nil
	}
	return WithCode(ExitUsage, fmt.Errorf("nothing usable in %s: no object the kubelet reads (%s)", strings.Join(files, ", "), strings.Join(manifests.Kinds(), ", ")))
}

// defaultPodReason says why the default pod is used, or "" when the input
// has pods.
func defaultPodReason(c *manifests.Cluster, files []string) string {
	if len(c.Pods()) > 0 {
		return ""
	}
	what := "no Pod in the input"
	if len(files) == 0 {
		what = "no -f given"
	}
	return what + ": using the default pod default/" + manifests.DefaultPodName +
		" (a claim, provisioned by CreateVolume when the driver offers CREATE_DELETE_VOLUME, else bound to a PersistentVolume with handle " + manifests.DefaultVolumeHandle +
		"; and an inline volume when the driver's CSIDriver allows Ephemeral; --volume-handle, --pod-uid)"
}

// selinuxFlag is --selinux: unset, the host is detected as `conformance`
// does; --selinux or --selinux=true simulates an SELinux host;
// --selinux=false a host without.
type SelinuxFlag struct {
	set, value bool
}

func (f *SelinuxFlag) String() string {
	if !f.set {
		return "detect"
	}
	return strconv.FormatBool(f.value)
}

func (f *SelinuxFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	f.set, f.value = true, v
	return nil
}

func (f *SelinuxFlag) Type() string { return "bool" }

// SELinuxHost is the SELinux host a run simulates, and why.
type SELinuxHost struct {
	Enabled bool
	Why     string
}

// resolve decides the host: the flag when given, else detect().
func (f *SelinuxFlag) Resolve(detect func() bool) SELinuxHost {
	switch {
	case f.set && f.value:
		return SELinuxHost{true, "simulated (--selinux=true)"}
	case f.set:
		return SELinuxHost{false, "off (--selinux=false): no context= mount option"}
	case detect():
		return SELinuxHost{true, "this host has SELinux (/sys/fs/selinux)"}
	}
	return SELinuxHost{false, "this host has no SELinux (/sys/fs/selinux absent): no context= mount option; --selinux=true simulates an SELinux host"}
}

// hostHasSELinux is how the kubelet's host tells SELinux is on (selinux.
// GetEnabled reads the selinuxfs mount), and how `conformance` detects it.
func hostHasSELinux() bool { return dirExists("/sys/fs/selinux") }

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

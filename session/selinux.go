package session

// The node's SELinux: detected, or as --selinux says.

import (
	"errors"
	"os"
	"strconv"
)

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

// Package cluster is the cluster around the simulated node in
// `--apiserver` mode: a real kube-apiserver on etcd (run by the helper
// csi-kubelet-sim-apiserver), on loopback, with a CA, keys and credentials
// made for the run; the input created through its API; the credentials of
// the kubelet and of the driver.
package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// KubeVersion is the release of the helper's kube-apiserver (its module's
// k8s.io/kubernetes).
const KubeVersion = "v1.37.2"

// HelperName is the control plane helper's executable.
const HelperName = "csi-kubelet-sim-apiserver"

// HelperEnv names the helper's path when it is neither beside the
// simulator's executable nor on $PATH.
const HelperEnv = "CSI_KUBELET_SIM_APISERVER"

// EtcdEnv names etcd's executable when it is not /usr/bin/etcd nor on $PATH.
const EtcdEnv = "CSI_KUBELET_SIM_ETCD"

// NotFoundError: the helper or etcd is missing (an environment problem,
// exit 3); the message says how to get it.
type NotFoundError struct {
	What   string
	Looked []string
	How    string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("--apiserver needs %s, and it is not at %v nor on $PATH: %s", e.What, e.Looked, e.How)
}

// HelperPath finds the helper: $CSI_KUBELET_SIM_APISERVER, beside the
// running executable, then on $PATH.
func HelperPath() (string, error) {
	if p := os.Getenv(HelperEnv); p != "" {
		if isFile(p) {
			return p, nil
		}
		return "", &NotFoundError{What: "the helper " + HelperName + " (kube-apiserver)", Looked: []string{p + " ($" + HelperEnv + ")"},
			How: "`make apiserver-helper` builds it, or fix $" + HelperEnv}
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if isFile(p) {
			return p, nil
		}
		looked = append(looked, p)
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", &NotFoundError{What: "the helper " + HelperName + " (kube-apiserver)", Looked: looked,
		How: "`make apiserver-helper install` builds it (from the module proxy) and installs it beside csi-kubelet-sim, or set $" + HelperEnv}
}

// EtcdPath finds etcd: $CSI_KUBELET_SIM_ETCD, /usr/bin/etcd, then $PATH.
func EtcdPath() (string, error) {
	if p := os.Getenv(EtcdEnv); p != "" {
		if isFile(p) {
			return p, nil
		}
		return "", &NotFoundError{What: "etcd (3.4 or later)", Looked: []string{p + " ($" + EtcdEnv + ")"},
			How: "install the system package etcd-server, or fix $" + EtcdEnv}
	}
	const system = "/usr/bin/etcd"
	if isFile(system) {
		return system, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", &NotFoundError{What: "etcd (3.4 or later)", Looked: []string{system},
		How: "install the system package etcd-server (`apt-get install etcd-server`, or `make apiserver-etcd`), or set $" + EtcdEnv}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

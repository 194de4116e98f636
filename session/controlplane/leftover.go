package controlplane

import (
	"fmt"
	"os"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// HasLeftover: a --apiserver run left its control plane's dir under root
// (it was killed: its helper died with it, its files stay).
func HasLeftover(root string) bool {
	_, err := os.Lstat(cluster.Dir(root))
	return err == nil
}

// RemoveLeftover stops the helper an interrupted --apiserver run left
// (if it still runs) and removes the control plane's dir: keys, etcd's
// data, logs. Only that dir, found where the run makes it, is touched.
// done says what was done; empty: nothing was there.
func RemoveLeftover(root string) (done string, err error) {
	l, err := cluster.FindLeftover(root)
	if err != nil || l == nil {
		return "", err
	}
	if err := l.Remove(); err != nil {
		return "", exitcode.With(exitcode.Environment, err)
	}
	if l.PID > 0 {
		return fmt.Sprintf("stopped the helper %s (PID %d) an interrupted --apiserver run left, and removed its dir %s", cluster.HelperName, l.PID, l.Dir), nil
	}
	return "removed the control plane an interrupted --apiserver run left (kube-apiserver and etcd were gone): " + l.Dir, nil
}

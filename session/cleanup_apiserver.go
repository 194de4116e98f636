package session

import (
	"fmt"
	"os"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// hasControlPlane: a --apiserver run left its control plane's dir under
// root (it was killed: its helper died with it, its files stay).
func hasControlPlane(root string) bool {
	_, err := os.Lstat(cluster.Dir(root))
	return err == nil
}

// cleanupControlPlane stops the helper an interrupted --apiserver run left
// (if it still runs) and removes the control plane's dir: keys, etcd's
// data, logs. Only that dir, found where the run makes it, is touched.
func cleanupControlPlane(ss *session, root string) error {
	l, err := cluster.FindLeftover(root)
	if err != nil || l == nil {
		return err
	}
	if err := l.Remove(); err != nil {
		return WithCode(ExitEnvironment, err)
	}
	what := "removed the control plane an interrupted --apiserver run left (kube-apiserver and etcd were gone): " + l.Dir
	if l.PID > 0 {
		what = fmt.Sprintf("stopped the helper %s (PID %d) an interrupted --apiserver run left, and removed its dir %s", cluster.HelperName, l.PID, l.Dir)
	}
	ss.announce(what)
	return nil
}

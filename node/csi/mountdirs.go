package csi

// mountdirs.go: the plugin's checks before it makes a volume's dir
// (csi_mounter.go and csi_attacher.go call os.MkdirAll there).

import "fmt"

// ClaimDir checks that a directory the kubelet is about to make for a pod
// or a volume is not someone else's; the error says whose it is not, and
// nothing is touched.
func (k *Plugin) ClaimDir(step, p string) error {
	if err := k.FS.Claim(p); err != nil {
		return &OpError{Kind: Transient, Err: fmt.Errorf("%s: %w", step, err)}
	}
	return nil
}

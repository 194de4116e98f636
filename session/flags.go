package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

// The flag groups the commands share, as kubectl keeps its genericclioptions:
// each flag is registered by its group, with the command's own words where
// its meaning differs, and completed or checked in one place. A command's
// options embed the groups it takes, so their fields read as its own.

// endpointUsage is --endpoint where it is the driver's (node) socket.
const EndpointUsage = "the driver's socket: unix:///path or a path, relative ones from the working directory (default $CSI_ENDPOINT)"

// endpointFlag is --endpoint, $CSI_ENDPOINT by default.
type EndpointFlag struct {
	Endpoint string
	endpoint csiclient.Endpoint
}

// completeEndpoint parses --endpoint; not a socket address is a usage
// error.
func (f *EndpointFlag) completeEndpoint() error {
	ep, err := csiclient.ParseEndpoint(f.Endpoint)
	if err != nil {
		return WithCode(ExitUsage, fmt.Errorf("--endpoint: %w", err))
	}
	f.endpoint = ep
	return nil
}

// outputFlag is -o/--output: text or json.
type OutputFlag struct {
	Output string
}

func (f *OutputFlag) ValidateOutput() error {
	if f.Output != "text" && f.Output != "json" {
		return WithCode(ExitUsage, fmt.Errorf("--output %q: want text or json", f.Output))
	}
	return nil
}

// releaseFlags are --kubelet-version and --feature-gates: the one release
// object of a command, parsed once.
type ReleaseFlags struct {
	KubeletVersion string
	FeatureGates   string
	Release        node.Release
}

func (f *ReleaseFlags) CompleteRelease() error {
	r, err := newRelease(f.KubeletVersion, f.FeatureGates)
	if err != nil {
		return err
	}
	f.Release = r
	return nil
}

// rootDirFlag is --root-dir.
type RootDirFlag struct {
	RootDir string
}

// completeRootDir is the one place --root-dir is judged: a system
// directory is refused, and the path made absolute (the paths sent to the
// driver are). Empty stays empty: the command makes a temp dir.
func (f *RootDirFlag) completeRootDir() error {
	if f.RootDir == "" {
		return nil
	}
	if err := rootdirs.Check(f.RootDir); err != nil {
		return err
	}
	abs, err := filepath.Abs(f.RootDir)
	if err != nil {
		return WithCode(ExitUsage, fmt.Errorf("--root-dir: %w", err))
	}
	f.RootDir = abs
	return nil
}

// timeoutFlag is --timeout.
type TimeoutFlag struct {
	Timeout time.Duration
}

func (f *TimeoutFlag) validateTimeout() error {
	if f.Timeout <= 0 {
		return WithCode(ExitUsage, errors.New("--timeout must be positive"))
	}
	return nil
}

// newRelease builds the one release object of a command from
// --kubelet-version and --feature-gates.
func newRelease(version, gates string) (node.Release, error) {
	if _, err := node.ParseVersion(version); err != nil {
		return node.Release{}, WithCode(ExitUsage, fmt.Errorf("--kubelet-version: %w", err))
	}
	r, err := node.NewRelease(version, gates)
	if err != nil {
		return node.Release{}, WithCode(ExitUsage, fmt.Errorf("--feature-gates: %w", err))
	}
	return r, nil
}

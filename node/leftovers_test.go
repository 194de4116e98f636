package node

import (
	"errors"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// A driver's mount that the simulator unmounted is reported (not Clean)
// but leaves nothing on disk, so no journal is kept for `cleanup`; a kept
// volume, a driver's file or an error keep it.
func TestLeftoversNothingOnDisk(t *testing.T) {
	cases := []struct {
		name               string
		l                  volumemanager.Leftovers
		clean, nothingLeft bool
	}{
		{"nothing", volumemanager.Leftovers{}, true, true},
		{"kubelet paths only", volumemanager.Leftovers{KubeletPaths: []string{"/r/plugins/kubernetes.io/csi/d"}}, true, true},
		{"driver mount unmounted", volumemanager.Leftovers{Mounts: []string{"/r/pods/u/volumes/kubernetes.io~csi/v/mount"}}, false, true},
		{"kept volume", volumemanager.Leftovers{Left: []volumemanager.Leftover{{Path: "/r/pods/u/volumes/kubernetes.io~csi/v", What: "volume", Owner: volumemanager.OwnerSimulator}}}, false, false},
		{"driver file", volumemanager.Leftovers{Left: []volumemanager.Leftover{{Path: "/r/x", What: "file", Owner: volumemanager.OwnerDriver}}}, false, false},
		{"error", volumemanager.Leftovers{Errors: []error{errors.New("remove /r/x: busy")}}, false, false},
	}
	for _, tc := range cases {
		if got := tc.l.Clean(); got != tc.clean {
			t.Errorf("%s: Clean() = %v, want %v", tc.name, got, tc.clean)
		}
		if got := tc.l.NothingOnDisk(); got != tc.nothingLeft {
			t.Errorf("%s: NothingOnDisk() = %v, want %v", tc.name, got, tc.nothingLeft)
		}
	}
}

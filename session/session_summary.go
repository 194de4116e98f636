package session

// What a session prints once the kubelet is done: what was left, the JSON
// summary.

import (
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

func leftoverList(l *node.Leftovers) string {
	if l == nil {
		return "nothing"
	}
	var parts []string
	for _, m := range l.Mounts {
		parts = append(parts, "mount "+m+" (the driver's, left after it answered OK; unmounted by the simulator)")
	}
	for _, x := range l.Left {
		parts = append(parts, x.String())
	}
	for _, e := range l.Errors {
		parts = append(parts, "error "+e.Error())
	}
	return strings.Join(parts, "; ")
}

// LeftoverText is what a session left, for people.
func LeftoverText(l *node.Leftovers) string {
	if l == nil || l.Clean() {
		return "nothing"
	}
	return leftoverList(l)
}

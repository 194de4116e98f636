package session

import "github.com/csi-kubelet-sim/csi-kubelet-sim/node"

// interruptedText says what an interrupt cut short and what it left.
func (ss *session) interruptedText(out *node.Outcome) string {
	switch {
	case out.RegErr != nil && ss.command == "cleanup":
		return "cleanup interrupted during the driver's registration, before any volume was touched; run it again to finish"
	case out.RegErr != nil:
		return "interrupted during the driver's registration (GetPluginInfo, NodeGetInfo), before any volume was mounted"
	case ss.command == "cleanup" && out.Leftovers != nil && out.Leftovers.Clean():
		return "cleanup interrupted, after its teardown was done"
	case ss.command == "cleanup":
		hint := ss.cleanupHint(out)
		if hint == "" {
			hint = "; run cleanup again to finish"
		}
		return "cleanup interrupted during the teardown; left: " + leftoverList(out.Leftovers) + hint
	case out.Abandoned || out.Leftovers.KeptForCleanup():
		return "interrupted during teardown; left: " + leftoverList(out.Leftovers) + ss.cleanupHint(out)
	}
	return "interrupted; volumes were unpublished and unstaged"
}

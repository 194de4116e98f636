package printers

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// ScenarioList is --list: name, docs section and what it checks; a
// JSON record each with -o json.
func ScenarioList(w io.Writer, output string) error {
	for _, sc := range session.AllScenarios() {
		switch output {
		case "json":
			b, err := json.Marshal(map[string]any{"schemaVersion": csiclient.SchemaVersion, "kind": "scenario", "name": sc.Name,
				"section": sc.Section, "checks": sc.Checks, "kubelet_specific": sc.KubeletSpecific})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		case "text":
			fmt.Fprintf(w, "%-44s §%-5s %s\n", sc.Name, sc.Section, sc.Checks)
		default:
			return session.WithCode(session.ExitUsage, fmt.Errorf("--output %q: want text or json", output))
		}
	}
	return nil
}

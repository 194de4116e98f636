package printers

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// ShortVersion is --version: one line, as cobra's version flag
// printed it.
func ShortVersion(out io.Writer) error {
	_, err := fmt.Fprintf(out, "csi-kubelet-sim %s\n", buildinfo.ReadVersionInfo().Version)
	return err
}

// Version is `version`: the build, as text or one JSON object.
func Version(out io.Writer, output string, v buildinfo.VersionInfo) error {
	switch output {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "text":
	default:
		return session.WithCode(session.ExitUsage, fmt.Errorf("--output %q: want text or json", output))
	}
	fmt.Fprintf(out, "csi-kubelet-sim %s (simulates kubelet %s, default %s)\n", v.Version, node.SupportedReleases(), v.DefaultKube)
	if v.Revision != "" {
		dirty := ""
		if v.Modified {
			dirty = ", modified"
		}
		fmt.Fprintf(out, "  commit  %s (%s%s)\n", v.Revision, v.Time, dirty)
	}
	fmt.Fprintf(out, "  built   %s %s, module %s\n", v.GoVersion, v.Platform, v.Module)
	return nil
}

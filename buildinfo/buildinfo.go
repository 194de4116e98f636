// Package buildinfo answers which build a binary is: its version (set by
// the command at start, from -ldflags), the module and VCS revision the Go
// toolchain stamped, the kubelet releases it claims, and the version of
// the documents its messages link.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// Version is the command's main.version, set at build time with -ldflags (the
// Makefile gives `git describe`); without it the module version of the
// build info is used.
var Version = "dev"

// readBuildInfo is debug.ReadBuildInfo, which parses the build info on
// every call: it is called only when a version is printed (`version`,
// `--version`), never on a start that prints none. A variable so that a
// test can tell.
var ReadBuildInfo = debug.ReadBuildInfo

// versionInfo is what `version -o json` prints.
type VersionInfo struct {
	SchemaVersion int      `json:"schemaVersion"`
	Version       string   `json:"version"`
	Module        string   `json:"module"`
	Revision      string   `json:"vcs_revision,omitempty"`
	Time          string   `json:"vcs_time,omitempty"`
	Modified      bool     `json:"vcs_modified,omitempty"`
	GoVersion     string   `json:"go_version"`
	Platform      string   `json:"platform"`
	Releases      []string `json:"kubelet_releases"`
	DefaultKube   string   `json:"kubelet_default"`
	// PreReleases: release -> the pre-release tag its rules were checked
	// against (node/release/releases.txt), for a release that has not shipped.
	PreReleases map[string]string `json:"kubelet_pre_releases,omitempty"`
}

// readVersionInfo reads the build info the Go toolchain stamps into the
// binary: the main module's version, the VCS revision and time (for
// builds inside a git checkout), and the Go version.
func ReadVersionInfo() VersionInfo {
	v := VersionInfo{
		SchemaVersion: csiclient.SchemaVersion,
		Version:       Version,
		Module:        "github.com/csi-kubelet-sim/csi-kubelet-sim",
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
		DefaultKube:   node.DefaultVersion.String(),
	}
	v.Releases = KubeletReleases()
	for _, r := range node.Releases() {
		if p := r.PreRelease(); p != "" {
			if v.PreReleases == nil {
				v.PreReleases = map[string]string{}
			}
			v.PreReleases[r.String()] = p
		}
	}
	bi, ok := ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module = bi.Main.Path
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// kubeletReleases are the releases --kubelet-version accepts, "1.30" to
// the newest.
func KubeletReleases() []string {
	var out []string
	for _, v := range node.Releases() {
		out = append(out, v.String())
	}
	return out
}

// buildVersion is the version for messages that link the documents: the
// one the Makefile stamps, else the build info's (read only then: an
// error that cites the docs is printed once, at the end).
func buildVersion() string {
	if Version != "dev" {
		return Version
	}
	return ReadVersionInfo().Version
}

// DocsRef is the version of the documents a message links to: the
// release the binary was built from, or main for a build without a tag.
func DocsRef() string {
	v := buildVersion()
	if strings.HasPrefix(v, "v") && strings.Count(v, ".") == 2 && !strings.Contains(v, "-") {
		return v
	}
	return "main"
}

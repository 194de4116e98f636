// version.go follows k8s.io/component-base/version: the release's minor
// version, with the version-dependent rules of docs/kubelet.md named on it.

package release

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// Version is the kubelet release whose behaviour is reproduced. Every
// version-dependent rule asks it, so that the rules sit in one place.
type Version struct {
	Minor int
}

// releasesFile is the one list of the releases the project claims (its
// comment says who else reads it).
//
//go:embed releases.txt
var releasesFile string

// claimed are the releases of releases.txt, parsed once; a malformed file
// is a build defect that TestReleasesFile catches.
var claimed = mustParseReleases(releasesFile)

// Supported releases, from releases.txt: MinMinor the oldest, MaxMinor the
// newest (a pre-release too). Releases, SupportedReleases, the flags'
// help, `version` and the errors all follow them.
var (
	MinMinor = claimed[0].minor
	MaxMinor = claimed[len(claimed)-1].minor
)

// DefaultVersion is the newest release simulated that is not a
// pre-release: a user who names no release gets one that has shipped.
var DefaultVersion = defaultVersion(claimed)

// claimedRelease is one line of releases.txt.
type claimedRelease struct {
	tag   string // v1.38.0-beta.0
	minor int
	pre   bool // a pre-release tag (-alpha.N, -beta.N, -rc.N)
}

// mustParseReleases reads releases.txt: one v1.MINOR.PATCH[-PRE] tag a
// line, minors consecutive and ascending, # comments.
func mustParseReleases(text string) []claimedRelease {
	rs, err := parseReleases(text)
	if err != nil {
		panic("node/release/releases.txt: " + err.Error())
	}
	return rs
}

func parseReleases(text string) ([]claimedRelease, error) {
	var out []claimedRelease
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		core, pre, _ := strings.Cut(strings.TrimPrefix(line, "v"), "-")
		parts := strings.Split(core, ".")
		if !strings.HasPrefix(line, "v1.") || len(parts) != 3 {
			return nil, fmt.Errorf("line %d: %q is not a tag like v1.37.2 or v1.38.0-beta.0", i+1, line)
		}
		minor, err1 := strconv.Atoi(parts[1])
		_, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: %q is not a tag like v1.37.2 or v1.38.0-beta.0", i+1, line)
		}
		if n := len(out); n > 0 && minor != out[n-1].minor+1 {
			return nil, fmt.Errorf("line %d: %s after %s: want one release per minor, oldest first", i+1, line, out[n-1].tag)
		}
		out = append(out, claimedRelease{tag: line, minor: minor, pre: pre != ""})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no release")
	}
	return out, nil
}

func defaultVersion(rs []claimedRelease) Version {
	for i := len(rs) - 1; i >= 0; i-- {
		if !rs[i].pre {
			return Version{Minor: rs[i].minor}
		}
	}
	return Version{Minor: rs[0].minor}
}

// ClaimedTags are the tags of releases.txt, oldest first.
func ClaimedTags() []string {
	out := make([]string, len(claimed))
	for i, r := range claimed {
		out[i] = r.tag
	}
	return out
}

// Releases are the releases the simulator reproduces, oldest first.
func Releases() []Version {
	out := make([]Version, 0, MaxMinor-MinMinor+1)
	for m := MinMinor; m <= MaxMinor; m++ {
		out = append(out, Version{Minor: m})
	}
	return out
}

// ParseVersion reads "1.36", "v1.36", "v1.36.3" or "v1.38.0-beta.0": the
// minor picks the rules, a patch or pre-release suffix changes nothing.
func ParseVersion(s string) (Version, error) {
	t, _, _ := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || parts[0] != "1" {
		return Version{}, fmt.Errorf("kubelet version %q: want 1.%d to 1.%d", s, MinMinor, MaxMinor)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < MinMinor || minor > MaxMinor {
		return Version{}, fmt.Errorf("kubelet version %q: want 1.%d to 1.%d", s, MinMinor, MaxMinor)
	}
	return Version{Minor: minor}, nil
}

// PreRelease is the pre-release tag whose code the release's rules were
// checked against ("v1.38.0-beta.0"), or "" for a release that shipped.
func (v Version) PreRelease() string {
	for _, r := range claimed {
		if r.minor == v.Minor && r.pre {
			return r.tag
		}
	}
	return ""
}

// Label is the release as users read it: "1.37", or
// "1.38 (pre-release: v1.38.0-beta.0)".
func (v Version) Label() string {
	if p := v.PreRelease(); p != "" {
		return fmt.Sprintf("%s (pre-release: %s)", v, p)
	}
	return v.String()
}

func (v Version) String() string { return fmt.Sprintf("1.%d", v.Minor) }

// The release-dependent rules that are not feature gates, each named for
// what changed, so that every version check reads as the rule it is (the
// gates are in features.go).

// CapabilityErrorsUncertain: since 1.36 a non-final NodeGetCapabilities
// error is an UncertainProgressError (nodeGetCapabilities, csi_client.go).
func (v Version) CapabilityErrorsUncertain() bool { return v.Minor >= 36 }

// KeepsTargetOnFailedRemount: since 1.36 a republish (remount) that fails
// with a final error keeps the target directory, which the pod still uses
// (csi_mounter.go SetUpAt, kubernetes#121271).
func (v Version) KeepsTargetOnFailedRemount() bool { return v.Minor >= 36 }

// SELinuxMountAnyAccessMode: with the SELinuxMount gate, from 1.32 any
// access mode qualifies; in 1.30 and 1.31 the PV still needed exactly one
// (util.VolumeSupportsSELinuxMount).
func (v Version) SELinuxMountAnyAccessMode() bool { return v.Minor >= 32 }

// AsksVolumeCondition: up to 1.36, with CSIVolumeHealth, the stats client
// asks VOLUME_CONDITION after NodeGetVolumeStats; 1.37 removed that code
// (csi_client.go NodeGetVolumeStats).
func (v Version) AsksVolumeCondition() bool { return v.Minor <= 36 }

// StatsWithoutUsageForCondition: from 1.32 an answer without usage is
// accepted from a driver with VOLUME_CONDITION (while it is still asked).
func (v Version) StatsWithoutUsageForCondition() bool { return v.Minor >= 32 }

// StagingDataWithoutStaging: up to 1.33 MountDevice writes the staging
// vol_data.json before it checks STAGE_UNSTAGE_VOLUME, so it is there even
// for a driver that does not stage (and UnmountDevice later finds it, asks
// STAGE_UNSTAGE_VOLUME again and removes globalmount); from 1.34 it is
// written only for a driver that stages (csi_attacher.go MountDevice,
// v1.33.13 against v1.34.4).
func (v Version) StagingDataWithoutStaging() bool { return v.Minor <= 33 }

// ExpansionByClaimStatus: from 1.31 a claim whose resizer recorded
// allocatedResources or a resize status takes the new expansion path even
// with RecoverVolumeExpansionFailure off; in 1.30 the gate alone decides
// (checkForRecoveryFromExpansion).
func (v Version) ExpansionByClaimStatus() bool { return v.Minor >= 31 }

// ExpandedClaimOnlyRWX: on the new expansion path a claim that already has
// the new size (the mount's expansion recorded it) is expanded again by
// the in-use pass only when ReadWriteMany from 1.32, and the pass counts it
// as done otherwise (also when the driver lacks EXPAND_VOLUME); in 1.30 and
// 1.31 the precheck lets every such claim through (node_expander.go
// runPreCheck, expandOnPlugin, v1.31.14 against v1.32.13).
func (v Version) ExpandedClaimOnlyRWX() bool { return v.Minor >= 32 }

// NodeExpansionNotRequired: from 1.34 the annotation
// volume.kubernetes.io/node-expansion-not-required spares an already grown
// ReadWriteMany claim the node's expansion (node_expander.go runPreCheck).
func (v Version) NodeExpansionNotRequired() bool { return v.Minor >= 34 }

// TokenRequestKeepsUID: from 1.34 the API server keeps a TokenRequest's
// metadata.uid (PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate)
// and fills an empty one with the ServiceAccount's; up to 1.33 it wipes
// it, as every subresource's (WipeObjectMetaSystemFields), and checks
// nothing (pkg/registry/core/serviceaccount/storage/token.go).
func (v Version) TokenRequestKeepsUID() bool { return v.Minor >= 34 }

// CSIDriverAttachRequiredPath: from 1.38 the API server's CSIDriver
// validation names the field spec.attachRequired; up to 1.37 its errors
// said spec.attachedRequired (pkg/apis/storage/validation
// validateCSIDriverSpec and ValidateCSIDriverUpdate, v1.37.2 against
// v1.38.0-beta.0).
func (v Version) CSIDriverAttachRequiredPath() bool { return v.Minor >= 38 }

// CSINodeOwnerFromLiveNode: from 1.38 the kubelet reads its Node right
// before it creates the CSINode and names the live Node's UID as the
// owner; up to 1.37 the UID it learnt on start (nodeinfomanager.go
// CreateCSINode, v1.37.2 against v1.38.0-beta.0).
func (v Version) CSINodeOwnerFromLiveNode() bool { return v.Minor >= 38 }

package node

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// Gate is a kubelet (or API server) feature gate that changes what a
// driver sees.
type Gate string

// The gates of node-side CSI (docs/kubelet.md §19.1).
const (
	SELinuxMountReadWriteOncePod   Gate = "SELinuxMountReadWriteOncePod"
	SELinuxMount                   Gate = "SELinuxMount"
	SELinuxChangePolicy            Gate = "SELinuxChangePolicy"
	ReadWriteOncePod               Gate = "ReadWriteOncePod"
	CSIVolumeHealth                Gate = "CSIVolumeHealth"
	CSIServiceAccountTokenSecrets  Gate = "CSIServiceAccountTokenSecrets"
	MutableCSINodeAllocatableCount Gate = "MutableCSINodeAllocatableCount"
	ServiceAccountTokenJTI         Gate = "ServiceAccountTokenJTI"
	ServiceAccountTokenPodNodeInfo Gate = "ServiceAccountTokenPodNodeInfo"
	RecoverVolumeExpansionFailure  Gate = "RecoverVolumeExpansionFailure"
	VolumeLimitScaling             Gate = "VolumeLimitScaling"
	CSINodeExpandSecret            Gate = "CSINodeExpandSecret"
	// PLEGOnDemandRelist: a pod sync that started containers relists the
	// pod at once, so the second sync (a republish) follows the first.
	PLEGOnDemandRelist Gate = "PLEGOnDemandRelist"
	// TokenRequestServiceAccountUIDValidation is the API server's: a
	// TokenRequest whose metadata.uid is not its ServiceAccount's is
	// refused (tokens.RequestUID).
	TokenRequestServiceAccountUIDValidation Gate = "TokenRequestServiceAccountUIDValidation"
)

// stage is a gate's maturity in one release.
type stage struct {
	on     bool
	locked bool // GA gates are locked to their default
	name   string
	gone   bool // the release no longer has the gate
}

var (
	alphaOff = stage{name: "alpha"}
	betaOff  = stage{name: "beta"}
	betaOn   = stage{on: true, name: "beta"}
	gaOn     = stage{on: true, locked: true, name: "GA"}
	// gaOnUnlocked is a GA gate still settable: SELinuxMount in 1.37
	// ("Lock in 1.38", pkg/features/kube_features.go).
	gaOnUnlocked = stage{on: true, name: "GA"}
	// removed: the gate is gone from this release on.
	removed = stage{gone: true}
)

// since is a gate's stage from a release on, until its next change.
type since struct {
	minor int
	stage stage
}

// gateTable holds each gate's changes, oldest first, as the versioned
// specs of pkg/features/kube_features.go write them: a stage holds from its
// release to the next change, the last one for every newer release up to
// MaxMinor, so that adding a release adds a row only for a gate that
// changes in it. A release before the first change does not have the
// gate. Sources: pkg/features of each release, as the gate table of
// docs/kubelet.md §19.1 lists them.
var gateTable = map[Gate][]since{
	SELinuxMountReadWriteOncePod:            {{30, betaOn}, {36, gaOn}},
	SELinuxMount:                            {{30, alphaOff}, {33, betaOff}, {37, gaOnUnlocked}},
	SELinuxChangePolicy:                     {{32, alphaOff}, {33, betaOn}, {36, gaOn}},
	ReadWriteOncePod:                        {{30, gaOn}, {31, removed}},
	CSIVolumeHealth:                         {{30, alphaOff}},
	CSIServiceAccountTokenSecrets:           {{35, betaOn}, {36, gaOn}},
	MutableCSINodeAllocatableCount:          {{33, alphaOff}, {34, betaOff}, {35, betaOn}, {36, gaOn}},
	ServiceAccountTokenJTI:                  {{30, betaOn}, {32, gaOn}},
	ServiceAccountTokenPodNodeInfo:          {{30, betaOn}, {32, gaOn}},
	RecoverVolumeExpansionFailure:           {{30, alphaOff}, {32, betaOn}, {34, gaOn}},
	VolumeLimitScaling:                      {{35, alphaOff}, {37, betaOn}},
	CSINodeExpandSecret:                     {{30, gaOn}, {31, removed}},
	PLEGOnDemandRelist:                      {{36, betaOn}, {37, gaOn}},
	TokenRequestServiceAccountUIDValidation: {{34, betaOn}},
}

// stageAt is the gate's stage in a release; false when the release does
// not have the gate (before its first stage, after its removal).
func stageAt(g Gate, minor int) (stage, bool) {
	var cur stage
	found := false
	for _, c := range gateTable[g] {
		if c.minor > minor {
			break
		}
		cur, found = c.stage, true
	}
	if !found || cur.gone {
		return stage{}, false
	}
	return cur, true
}

// FeatureGates are the gates of one kubelet release with the user's
// overrides; every gate-dependent rule asks it.
type FeatureGates struct {
	version Version
	enabled map[Gate]bool
}

// NewFeatureGates returns the release's defaults with overrides in the
// kubelet's --feature-gates syntax (A=true,B=false). It refuses gates the
// release does not have and changes to locked gates, in the words of
// component-base's featuregate.
func NewFeatureGates(v Version, overrides string) (*FeatureGates, error) {
	f := &FeatureGates{version: v, enabled: map[Gate]bool{}}
	for g := range gateTable {
		if s, ok := stageAt(g, v.Minor); ok {
			f.enabled[g] = s.on
		}
	}
	if strings.TrimSpace(overrides) == "" {
		return f, nil
	}
	for _, kv := range strings.Split(overrides, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("missing bool value for %s", kv)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("invalid value of %s=%s, err: %v", name, val, err)
		}
		g := Gate(strings.TrimSpace(name))
		s, ok := stageAt(g, v.Minor)
		if !ok {
			return nil, fmt.Errorf("unrecognized feature gate: %s (kubelet %s)", g, v)
		}
		if s.locked && on != s.on {
			return nil, fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", g, on, s.on)
		}
		f.enabled[g] = on
	}
	return f, nil
}

// Enabled tells whether a gate is on; a gate the release lacks is off.
func (f *FeatureGates) Enabled(g Gate) bool { return f.enabled[g] }

// Version is the release the gates belong to.
func (f *FeatureGates) Version() Version { return f.version }

// String lists the gates as --feature-gates would set them.
func (f *FeatureGates) String() string {
	names := make([]string, 0, len(f.enabled))
	for g, on := range f.enabled {
		names = append(names, fmt.Sprintf("%s=%t", g, on))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// APIServerDefaults are the API server's CSIDriver defaults and dropped
// fields for these gates: a cluster of one release runs its API server
// with the same gates as its kubelet.
func (f *FeatureGates) APIServerDefaults() manifests.Defaults {
	return manifests.Defaults{
		PreventPodSchedulingIfMissing: f.Enabled(VolumeLimitScaling),
		Dropped: manifests.DroppedFields{
			ServiceAccountTokenInSecrets:       !f.Enabled(CSIServiceAccountTokenSecrets),
			SELinuxMount:                       !f.Enabled(SELinuxMountReadWriteOncePod),
			NodeAllocatableUpdatePeriodSeconds: !f.Enabled(MutableCSINodeAllocatableCount),
			PreventPodSchedulingIfMissing:      !f.Enabled(VolumeLimitScaling),
		},
	}
}

// names are the release's gates, sorted.
func (f *FeatureGates) names() []Gate {
	out := make([]Gate, 0, len(f.enabled))
	for g := range f.enabled {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

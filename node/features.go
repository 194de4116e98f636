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
}

var (
	alphaOff = stage{name: "alpha"}
	betaOff  = stage{name: "beta"}
	betaOn   = stage{on: true, name: "beta"}
	gaOn     = stage{on: true, locked: true, name: "GA"}
	// gaOnUnlocked is a GA gate still settable: SELinuxMount in 1.37
	// ("Lock in 1.38", pkg/features/kube_features.go).
	gaOnUnlocked = stage{on: true, name: "GA"}
)

// gateTable holds each gate's stage per minor release; a release missing
// from a gate's map does not have the gate. Sources: pkg/features of each
// release, as the gate table of docs/kubelet.md §19.1 lists them.
var gateTable = map[Gate]map[int]stage{
	SELinuxMountReadWriteOncePod:            span(30, 35, betaOn, 36, 37, gaOn),
	SELinuxMount:                            join(span(30, 32, alphaOff, 33, 36, betaOff), span(37, 37, gaOnUnlocked, 0, -1, stage{})),
	SELinuxChangePolicy:                     join(span(32, 32, alphaOff, 33, 35, betaOn), span(36, 37, gaOn, 0, -1, stage{})),
	ReadWriteOncePod:                        span(30, 30, gaOn, 0, -1, stage{}),
	CSIVolumeHealth:                         span(30, 37, alphaOff, 0, -1, stage{}),
	CSIServiceAccountTokenSecrets:           span(35, 35, betaOn, 36, 37, gaOn),
	MutableCSINodeAllocatableCount:          join(span(33, 33, alphaOff, 34, 34, betaOff), span(35, 35, betaOn, 36, 37, gaOn)),
	ServiceAccountTokenJTI:                  span(30, 31, betaOn, 32, 37, gaOn),
	ServiceAccountTokenPodNodeInfo:          span(30, 31, betaOn, 32, 37, gaOn),
	RecoverVolumeExpansionFailure:           join(span(30, 31, alphaOff, 32, 33, betaOn), span(34, 37, gaOn, 0, -1, stage{})),
	VolumeLimitScaling:                      span(35, 36, alphaOff, 37, 37, betaOn),
	CSINodeExpandSecret:                     span(30, 30, gaOn, 0, -1, stage{}),
	TokenRequestServiceAccountUIDValidation: span(34, 37, betaOn, 0, -1, stage{}),
}

// span gives stage a to releases from..to and stage b to from2..to2.
func span(from, to int, a stage, from2, to2 int, b stage) map[int]stage {
	m := map[int]stage{}
	for v := from; v <= to; v++ {
		m[v] = a
	}
	for v := from2; v <= to2; v++ {
		m[v] = b
	}
	return m
}

func join(a, b map[int]stage) map[int]stage {
	for k, v := range b {
		a[k] = v
	}
	return a
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
	for g, stages := range gateTable {
		if s, ok := stages[v.Minor]; ok {
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
		s, ok := gateTable[g][v.Minor]
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

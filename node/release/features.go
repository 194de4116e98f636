// features.go follows pkg/features/kube_features.go and
// k8s.io/component-base/featuregate: the gates, their defaults per release,
// and the --feature-gates syntax.

package release

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
	// ServiceAccountTokenNodeBinding(Validation) are the API server's:
	// tokens bound to a Node, and the node's UID checked when a token is
	// used. Nothing a driver sees depends on them; they are here so that
	// --feature-gates accepts and refuses them as the release does.
	ServiceAccountTokenNodeBinding           Gate = "ServiceAccountTokenNodeBinding"
	ServiceAccountTokenNodeBindingValidation Gate = "ServiceAccountTokenNodeBindingValidation"
	RecoverVolumeExpansionFailure            Gate = "RecoverVolumeExpansionFailure"
	VolumeLimitScaling                       Gate = "VolumeLimitScaling"
	CSINodeExpandSecret                      Gate = "CSINodeExpandSecret"
	// PLEGOnDemandRelist: a pod sync that started containers relists the
	// pod at once, so the second sync (a republish) follows the first.
	PLEGOnDemandRelist Gate = "PLEGOnDemandRelist"
	// TokenRequestServiceAccountUIDValidation is the API server's: a
	// TokenRequest whose metadata.uid is not its ServiceAccount's is
	// refused (tokens.RequestUID).
	TokenRequestServiceAccountUIDValidation Gate = "TokenRequestServiceAccountUIDValidation"
)

// lifecycle is a gate's life, each step with the Kubernetes minor that
// took it (0: not taken, or not before the oldest release simulated), as
// the versioned specs of pkg/features/kube_features.go write them:
//
//	alpha     settable, off
//	beta      settable, off until on
//	on        the release whose default turned on (beta or GA)
//	ga        GA: on, still settable until locked
//	locked    GA and locked to on (LockToDefault)
//	removed   the gate's name is gone from --feature-gates (refused as
//	          unrecognized) while its behaviour stays on: a gate is removed
//	          only after GA, and the code keeps what the gate turned on
//
// A step holds from its release to every newer one until the next step,
// so that adding a release changes only the rows of gates that change in
// it. A release before a gate's first step does not have it.
type lifecycle struct {
	alpha, beta, on, ga, locked, removed int
}

// gateTable is the one place that says which gate is what in which
// release. Sources: pkg/features/kube_features.go (and k8s.io/apiserver's
// pkg/features for the API server's) of each release, v1.30.14 to
// v1.38.0-beta.0; docs/kubelet.md §19.1 lists the same table by release.
var gateTable = map[Gate]lifecycle{
	SELinuxMountReadWriteOncePod: {alpha: 25, beta: 27, on: 28, ga: 36, locked: 36},
	// SELinuxMount: GA in 1.37, not locked in v1.38.0-beta.0 ("Lock in
	// 1.38 to be on the safe side": watch 1.38.0).
	SELinuxMount:                  {alpha: 30, beta: 33, on: 37, ga: 37},
	SELinuxChangePolicy:           {alpha: 32, beta: 33, on: 33, ga: 36, locked: 36},
	ReadWriteOncePod:              {alpha: 22, beta: 27, on: 27, ga: 29, locked: 29, removed: 31},
	CSIVolumeHealth:               {alpha: 21},
	CSIServiceAccountTokenSecrets: {beta: 35, on: 35, ga: 36, locked: 36},
	// MutableCSINodeAllocatableCount: "remove in 1.38", still there in
	// v1.38.0-beta.0: watch 1.38.0.
	MutableCSINodeAllocatableCount:           {alpha: 33, beta: 34, on: 35, ga: 36, locked: 36},
	ServiceAccountTokenJTI:                   {alpha: 29, beta: 30, on: 30, ga: 32, locked: 32, removed: 38},
	ServiceAccountTokenPodNodeInfo:           {alpha: 29, beta: 30, on: 30, ga: 32, locked: 32, removed: 38},
	ServiceAccountTokenNodeBinding:           {alpha: 29, beta: 31, on: 31, ga: 33, locked: 33, removed: 38},
	ServiceAccountTokenNodeBindingValidation: {alpha: 29, beta: 30, on: 30, ga: 32, locked: 32, removed: 38},
	RecoverVolumeExpansionFailure:            {alpha: 23, beta: 32, on: 32, ga: 34, locked: 34, removed: 38},
	VolumeLimitScaling:                       {alpha: 35, beta: 37, on: 37},
	CSINodeExpandSecret:                      {alpha: 25, beta: 27, on: 27, ga: 29, locked: 29, removed: 31},
	PLEGOnDemandRelist:                       {beta: 36, on: 36, ga: 37, locked: 37},
	TokenRequestServiceAccountUIDValidation:  {beta: 34, on: 34},
}

// stage is a gate's state in one release.
type stage struct {
	name    string // alpha, beta, GA, removed; "" when the release lacks the gate
	on      bool
	locked  bool // GA gates are locked to their default
	removed bool // on, and the name refused
}

// at is the gate's stage in a release.
func (l lifecycle) at(minor int) stage {
	reached := func(step int) bool { return step != 0 && minor >= step }
	on := reached(l.on)
	switch {
	case reached(l.removed):
		return stage{name: "removed", on: true, locked: true, removed: true}
	case reached(l.locked):
		return stage{name: "GA", on: true, locked: true}
	case reached(l.ga):
		return stage{name: "GA", on: true}
	case reached(l.beta):
		return stage{name: "beta", on: on}
	case reached(l.alpha):
		return stage{name: "alpha", on: on}
	}
	return stage{}
}

// stageAt is the gate's stage in a release; false when the release does
// not have the gate (before its first step; never for a removed gate,
// whose behaviour the release keeps).
func stageAt(g Gate, minor int) (stage, bool) {
	l, ok := gateTable[g]
	if !ok {
		return stage{}, false
	}
	s := l.at(minor)
	return s, s.name != ""
}

// FeatureGates are the gates of one kubelet release with the user's
// overrides; every gate-dependent rule asks it.
type FeatureGates struct {
	version Version
	enabled map[Gate]bool
	// removed are the release's removed gates: on, not settable, not
	// listed (the kubelet has no such name any more).
	removed map[Gate]bool
}

// NewFeatureGates returns the release's defaults with overrides in the
// kubelet's --feature-gates syntax (A=true,B=false). It refuses gates the
// release does not have and changes to locked gates, in the words of
// component-base's featuregate.
func NewFeatureGates(v Version, overrides string) (*FeatureGates, error) {
	f := &FeatureGates{version: v, enabled: map[Gate]bool{}, removed: map[Gate]bool{}}
	for g := range gateTable {
		if s, ok := stageAt(g, v.Minor); ok {
			f.enabled[g] = s.on
			f.removed[g] = s.removed
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
		if s.removed {
			l := gateTable[g]
			return nil, fmt.Errorf("unrecognized feature gate: %s (kubelet %s: removed in 1.%d, GA and always on since 1.%d; drop it from --feature-gates)", g, v, l.removed, l.ga)
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
	for _, g := range f.names() {
		names = append(names, fmt.Sprintf("%s=%t", g, f.enabled[g]))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// APIServerDefaults are the API server's CSIDriver defaults and dropped
// fields for these gates: a cluster of one release runs its API server
// with the same gates as its kubelet.
func (f *FeatureGates) APIServerDefaults() manifests.Defaults {
	return manifests.Defaults{
		AttachRequiredPath:            f.version.CSIDriverAttachRequiredPath(),
		PreventPodSchedulingIfMissing: f.Enabled(VolumeLimitScaling),
		Dropped: manifests.DroppedFields{
			ServiceAccountTokenInSecrets:       !f.Enabled(CSIServiceAccountTokenSecrets),
			SELinuxMount:                       !f.Enabled(SELinuxMountReadWriteOncePod),
			NodeAllocatableUpdatePeriodSeconds: !f.Enabled(MutableCSINodeAllocatableCount),
			PreventPodSchedulingIfMissing:      !f.Enabled(VolumeLimitScaling),
		},
	}
}

// names are the release's settable gates, sorted (not the removed ones).
func (f *FeatureGates) names() []Gate {
	out := make([]Gate, 0, len(f.enabled))
	for g := range f.enabled {
		if !f.removed[g] {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

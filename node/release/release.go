// Package release is the kubelet release whose behaviour is reproduced: its
// version and named rules (version.go, as k8s.io/component-base/version
// names a release), its feature gates with the user's overrides
// (features.go, after pkg/features/kube_features.go), and the Release that
// every release-dependent decision of the kubelet is asked of (release.go).
// It is node's lowest layer with rootdir: it imports no sibling package.
//
// release.go: the kubelet's release as one object, as the kubelet reads
// its version and its --feature-gates once at start (cmd/kubelet/app/server.go).
package release

import (
	"fmt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Release is the one object every release-dependent decision is asked of:
// the kubelet's minor version with its named rules (version.go), the
// feature gates with the user's overrides (features.go), the API server's
// defaults of the same cluster, and the claims its token issuer writes.
// Commands build it once from --kubelet-version and --feature-gates and
// hand it to every kubelet, conformance scenario and token source.
type Release struct {
	Version
	Gates *FeatureGates
}

// SupportedReleases says which releases the simulator reproduces, for
// flags, usage text and `version`; a pre-release is named as such
// ("1.30 to 1.38 (1.38 is a pre-release: v1.38.0-beta.0)").
func SupportedReleases() string {
	s := fmt.Sprintf("1.%d to 1.%d", MinMinor, MaxMinor)
	for _, v := range Releases() {
		if p := v.PreRelease(); p != "" {
			s += fmt.Sprintf(" (%s is a pre-release: %s)", v, p)
		}
	}
	return s
}

// NewRelease parses a --kubelet-version ("1.36", "v1.36.3"; "" is the
// newest) and --feature-gates ("A=true,B=false") pair.
func NewRelease(version, gates string) (Release, error) {
	v := DefaultVersion
	if version != "" {
		var err error
		if v, err = ParseVersion(version); err != nil {
			return Release{}, err
		}
	}
	g, err := NewFeatureGates(v, gates)
	if err != nil {
		return Release{}, err
	}
	return Release{Version: v, Gates: g}, nil
}

// DefaultRelease is the newest release with its default gates.
func DefaultRelease() Release {
	r, _ := NewRelease("", "")
	return r
}

// Valid tells whether r was built (a zero Release has no gates).
func (r Release) Valid() bool { return r.Minor != 0 && r.Gates != nil }

// Enabled tells whether a gate is on in this release.
func (r Release) Enabled(g Gate) bool { return r.Gates.Enabled(g) }

// APIServerDefaults are the API server's CSIDriver defaults and dropped
// fields: a cluster runs its API server with the kubelet's gates.
func (r Release) APIServerDefaults() manifests.Defaults { return r.Gates.APIServerDefaults() }

// TokenClaims are the optional claims the API server of this release puts
// in service-account tokens (ServiceAccountTokenJTI,
// ServiceAccountTokenPodNodeInfo; pkg/serviceaccount/claims.go).
type TokenClaims struct {
	JTI         bool
	PodNodeInfo bool
}

// TokenClaims returns the claims the release's token issuer writes.
func (r Release) TokenClaims() TokenClaims {
	return TokenClaims{JTI: r.Enabled(ServiceAccountTokenJTI), PodNodeInfo: r.Enabled(ServiceAccountTokenPodNodeInfo)}
}

// IssuerConfig is the release's API server configuration for tokens: the
// defaults (tokens.DefaultIssuerConfig) with the claims (TokenClaims) and
// the request UID rule (TokenRequestUID) of this release. `run` (through
// TokenSource) and `tokens mint` both start from it.
func (r Release) IssuerConfig() tokens.IssuerConfig {
	cfg := tokens.DefaultIssuerConfig()
	claims := r.TokenClaims()
	cfg.JTI, cfg.PodNodeInfo = claims.JTI, claims.PodNodeInfo
	cfg.RequestUID = r.TokenRequestUID()
	return cfg
}

// TokenRequestUID is what the release's API server does with a
// TokenRequest's metadata.uid: wiped up to 1.33, then checked against the
// ServiceAccount's, refused on a mismatch with
// TokenRequestServiceAccountUIDValidation (on by default) and only warned
// about without it (docs/kubelet.md §4.2).
func (r Release) TokenRequestUID() tokens.RequestUID {
	switch {
	case !r.TokenRequestKeepsUID():
		return tokens.RequestUIDWiped
	case r.Enabled(TokenRequestServiceAccountUIDValidation):
		return tokens.RequestUIDValidated
	default:
		return tokens.RequestUIDWarned
	}
}

// Describe is the release (marked when a pre-release) with the gates that
// differ from its defaults, as the trace's header shows it.
func (r Release) Describe() string {
	def, _ := NewFeatureGates(r.Version, "")
	s := "kubelet " + r.Version.Label()
	changed := ""
	for _, g := range r.Gates.names() {
		if r.Gates.Enabled(g) != def.Enabled(g) {
			if changed != "" {
				changed += ","
			}
			changed += fmt.Sprintf("%s=%t", g, r.Gates.Enabled(g))
		}
	}
	if changed != "" {
		s += " (feature gates " + changed + ")"
	}
	return s
}

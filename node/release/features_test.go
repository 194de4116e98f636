package release

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// gateReleases is the gate table (docs/kubelet.md §19.1) written out, one
// letter per release from 1.30 to 1.38: o on (settable), f off (settable),
// L on and locked (GA), R removed (on, its name refused), - the release
// does not have the gate. A newer release keeps a gate's last letter until
// a letter is written for it. Checked against pkg/features of each release
// (1.38: v1.38.0-beta.0).
var gateReleases = map[Gate]string{
	//                                        30.......38
	SELinuxMountReadWriteOncePod:             "ooooooLLL",
	SELinuxMount:                             "fffffffoo",
	SELinuxChangePolicy:                      "--foooLLL",
	ReadWriteOncePod:                         "LRRRRRRRR",
	CSIVolumeHealth:                          "fffffffff",
	CSIServiceAccountTokenSecrets:            "-----oLLL",
	MutableCSINodeAllocatableCount:           "---ffoLLL",
	ServiceAccountTokenJTI:                   "ooLLLLLLR",
	ServiceAccountTokenPodNodeInfo:           "ooLLLLLLR",
	ServiceAccountTokenNodeBinding:           "fooLLLLLR",
	ServiceAccountTokenNodeBindingValidation: "ooLLLLLLR",
	RecoverVolumeExpansionFailure:            "ffooLLLLR",
	VolumeLimitScaling:                       "-----ffoo",
	CSINodeExpandSecret:                      "LRRRRRRRR",
	PLEGOnDemandRelist:                       "------oLL",
	TokenRequestServiceAccountUIDValidation:  "----ooooo",
}

// Every gate at every release: its default, and the override to the other
// value accepted, refused as locked, or refused as unknown, in
// component-base's words.
func TestGateTable(t *testing.T) {
	if len(gateTable) != len(gateReleases) {
		t.Fatalf("gateTable has %d gates, this test %d: add the new gate here", len(gateTable), len(gateReleases))
	}
	for g, row := range gateReleases {
		for _, v := range Releases() {
			minor := v.Minor
			c := rune(row[min(minor-MinMinor, len(row)-1)])
			t.Run(fmt.Sprintf("%s/1.%d", g, minor), func(t *testing.T) {
				v := Version{Minor: minor}
				def, err := NewFeatureGates(v, "")
				if err != nil {
					t.Fatal(err)
				}
				wantOn := c == 'o' || c == 'L' || c == 'R'
				if def.Enabled(g) != wantOn {
					t.Errorf("default %t, want %t", def.Enabled(g), wantOn)
				}
				if wantListed := c != '-' && c != 'R'; listed(def, g) != wantListed {
					t.Errorf("String %q: listed %t, want %t", def.String(), listed(def, g), wantListed)
				}
				flip := fmt.Sprintf("%s=%t", g, !wantOn)
				got, err := NewFeatureGates(v, flip)
				switch c {
				case 'o', 'f':
					if err != nil || got.Enabled(g) == wantOn {
						t.Errorf("%s: %v, enabled %t", flip, err, got != nil && got.Enabled(g))
					} else if !slices.Contains(strings.Split(got.String(), ","), flip) {
						t.Errorf("String %q does not list %s", got.String(), flip)
					}
				case 'L':
					want := fmt.Sprintf("cannot set feature gate %s to false, feature is locked to true", g)
					if err == nil || err.Error() != want {
						t.Errorf("%s: %v, want %q", flip, err, want)
					}
					if _, err := NewFeatureGates(v, fmt.Sprintf("%s=true", g)); err != nil {
						t.Errorf("setting a locked gate to its value: %v", err)
					}
				case '-':
					want := fmt.Sprintf("unrecognized feature gate: %s (kubelet 1.%d)", g, minor)
					if err == nil || err.Error() != want {
						t.Errorf("%s: %v, want %q", flip, err, want)
					}
				case 'R':
					// Refused by name whatever the value, as the release's
					// kubelet refuses a name it no longer has.
					for _, val := range []string{"true", "false"} {
						set := fmt.Sprintf("%s=%s", g, val)
						_, err := NewFeatureGates(v, set)
						want := fmt.Sprintf("unrecognized feature gate: %s (kubelet 1.%d: removed in 1.", g, minor)
						if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
							t.Errorf("%s: %v, want a one-line error starting %q", set, err, want)
						}
					}
				}
			})
		}
	}
}

// listed tells whether String names the gate.
func listed(f *FeatureGates, g Gate) bool {
	for _, kv := range strings.Split(f.String(), ",") {
		if name, _, _ := strings.Cut(kv, "="); name == string(g) {
			return true
		}
	}
	return false
}

func TestFeatureGatesParse(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
		on      []Gate
	}{
		{in: " SELinuxMount = true , CSIVolumeHealth=1", on: []Gate{SELinuxMount, CSIVolumeHealth}},
		{in: "SELinuxMount", wantErr: "missing bool value for SELinuxMount"},
		{in: "SELinuxMount=maybe", wantErr: `invalid value of SELinuxMount=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{in: "NoSuchGate=true", wantErr: "unrecognized feature gate: NoSuchGate (kubelet 1.36)"},
		{in: "   ", on: nil},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			f, err := NewFeatureGates(Version{Minor: 36}, tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range tc.on {
				if !f.Enabled(g) {
					t.Errorf("%s off", g)
				}
			}
			if f.Version() != (Version{Minor: 36}) {
				t.Errorf("Version = %v", f.Version())
			}
		})
	}
	f, _ := NewFeatureGates(Version{Minor: 30}, "")
	const want30 = "CSINodeExpandSecret=true,CSIVolumeHealth=false,ReadWriteOncePod=true,RecoverVolumeExpansionFailure=false," +
		"SELinuxMount=false,SELinuxMountReadWriteOncePod=true,ServiceAccountTokenJTI=true,ServiceAccountTokenNodeBinding=false," +
		"ServiceAccountTokenNodeBindingValidation=true,ServiceAccountTokenPodNodeInfo=true"
	if f.String() != want30 {
		t.Errorf("1.30 String =\n %q\nwant %q", f.String(), want30)
	}
}

// The API server of the same release drops the CSIDriver fields whose
// gates are off and defaults preventPodSchedulingIfMissing with
// VolumeLimitScaling.
func TestAPIServerDefaults(t *testing.T) {
	tests := []struct {
		minor int
		gates string
		want  manifests.Defaults
	}{
		{30, "", manifests.Defaults{Dropped: manifests.DroppedFields{ServiceAccountTokenInSecrets: true, NodeAllocatableUpdatePeriodSeconds: true, PreventPodSchedulingIfMissing: true}}},
		{34, "", manifests.Defaults{Dropped: manifests.DroppedFields{ServiceAccountTokenInSecrets: true, NodeAllocatableUpdatePeriodSeconds: true, PreventPodSchedulingIfMissing: true}}},
		{34, "MutableCSINodeAllocatableCount=true", manifests.Defaults{Dropped: manifests.DroppedFields{ServiceAccountTokenInSecrets: true, PreventPodSchedulingIfMissing: true}}},
		{35, "", manifests.Defaults{Dropped: manifests.DroppedFields{PreventPodSchedulingIfMissing: true}}},
		{35, "SELinuxMountReadWriteOncePod=false,CSIServiceAccountTokenSecrets=false", manifests.Defaults{Dropped: manifests.DroppedFields{ServiceAccountTokenInSecrets: true, SELinuxMount: true, PreventPodSchedulingIfMissing: true}}},
		{36, "VolumeLimitScaling=true", manifests.Defaults{PreventPodSchedulingIfMissing: true}},
		{37, "", manifests.Defaults{PreventPodSchedulingIfMissing: true}},
		{37, "VolumeLimitScaling=false", manifests.Defaults{Dropped: manifests.DroppedFields{PreventPodSchedulingIfMissing: true}}},
		{38, "", manifests.Defaults{AttachRequiredPath: true, PreventPodSchedulingIfMissing: true}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("1.%d %s", tc.minor, tc.gates), func(t *testing.T) {
			f, err := NewFeatureGates(Version{Minor: tc.minor}, tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.APIServerDefaults(); got != tc.want {
				t.Errorf("APIServerDefaults = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The release object built from the two flags: its version, gates, token
// claims, and how the trace names it.
func TestNewRelease(t *testing.T) {
	tests := []struct {
		version, gates string
		wantErr        string
		wantMinor      int
		wantDescribe   string
		wantClaims     TokenClaims
	}{
		{version: "", wantMinor: DefaultVersion.Minor, wantDescribe: "kubelet " + DefaultVersion.String(), wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "v1.38.0-beta.0", wantMinor: 38, wantDescribe: "kubelet 1.38 (pre-release: v1.38.0-beta.0)", wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "1.38", gates: "ServiceAccountTokenJTI=true", wantErr: "unrecognized feature gate: ServiceAccountTokenJTI (kubelet 1.38: removed in 1.38, GA and always on since 1.32; drop it from --feature-gates)"},
		{version: "1.37", gates: "ServiceAccountTokenJTI=true,RecoverVolumeExpansionFailure=true", wantMinor: 37, wantDescribe: "kubelet 1.37", wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "v1.31.4", gates: "ServiceAccountTokenJTI=false", wantMinor: 31,
			wantDescribe: "kubelet 1.31 (feature gates ServiceAccountTokenJTI=false)", wantClaims: TokenClaims{PodNodeInfo: true}},
		{version: "1.36", gates: "SELinuxMount=true,CSIVolumeHealth=true,SELinuxChangePolicy=true", wantMinor: 36,
			wantDescribe: "kubelet 1.36 (feature gates CSIVolumeHealth=true,SELinuxMount=true)", wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "1.29", wantErr: `kubelet version "1.29": want 1.30 to ` + Version{Minor: MaxMinor}.String()},
		{version: "1.37", gates: "ReadWriteOncePod=true", wantErr: "unrecognized feature gate: ReadWriteOncePod (kubelet 1.37: removed in 1.31, GA and always on since 1.29; drop it from --feature-gates)"},
	}
	for _, tc := range tests {
		t.Run(tc.version+" "+tc.gates, func(t *testing.T) {
			r, err := NewRelease(tc.version, tc.gates)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Minor != tc.wantMinor || r.Gates.Version() != r.Version || !r.Valid() {
				t.Errorf("release %v (gates of %v)", r.Version, r.Gates.Version())
			}
			if got := r.Describe(); got != tc.wantDescribe {
				t.Errorf("Describe = %q, want %q", got, tc.wantDescribe)
			}
			if got := r.TokenClaims(); got != tc.wantClaims {
				t.Errorf("TokenClaims = %+v, want %+v", got, tc.wantClaims)
			}
			if r.APIServerDefaults() != r.Gates.APIServerDefaults() {
				t.Errorf("APIServerDefaults differ from the gates'")
			}
		})
	}
	if want := "1.30 to 1.38 (1.38 is a pre-release: v1.38.0-beta.0)"; SupportedReleases() != want {
		t.Errorf("SupportedReleases = %q, want %q", SupportedReleases(), want)
	}
	// The default is the newest release that shipped, not the pre-release.
	if d := DefaultRelease(); d.Minor != 37 || d.Describe() != "kubelet 1.37" {
		t.Errorf("DefaultRelease = %s", d.Describe())
	}
	if (Release{}).Valid() {
		t.Errorf("the zero Release is valid")
	}
}

// The gate table is open-ended: a release after the newest has every gate
// as the newest has it, so that adding a release (README, "Adding a
// release") means a line in releases.txt and a step only for a gate that
// changes in it, not extending every row.
func TestGateTableOpenEnded(t *testing.T) {
	newest, err := NewFeatureGates(Version{Minor: MaxMinor}, "")
	if err != nil {
		t.Fatal(err)
	}
	next, err := NewFeatureGates(Version{Minor: MaxMinor + 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	if next.String() != newest.String() {
		t.Errorf("1.%d gates\n %s\nwant the newest's\n %s", MaxMinor+1, next.String(), newest.String())
	}
	for g := range gateTable {
		s1, ok1 := stageAt(g, MaxMinor)
		s2, ok2 := stageAt(g, MaxMinor+1)
		if s1 != s2 || ok1 != ok2 {
			t.Errorf("%s: 1.%d %+v %t, 1.%d %+v %t", g, MaxMinor, s1, ok1, MaxMinor+1, s2, ok2)
		}
	}
	if rs := Releases(); len(rs) != MaxMinor-MinMinor+1 || rs[0].Minor != MinMinor || rs[len(rs)-1].Minor != MaxMinor {
		t.Errorf("Releases() = %v", rs)
	}
}

// The gates removed at 1.38 (after GA): accepted by name at 1.37, refused
// at 1.38 with a one-line error, and on in both, so that tokens keep jti
// and the node's claims (kubernetes.io.node) and expansion its new path.
func TestGatesRemovedAt138(t *testing.T) {
	for _, g := range []Gate{RecoverVolumeExpansionFailure, ServiceAccountTokenJTI, ServiceAccountTokenPodNodeInfo,
		ServiceAccountTokenNodeBinding, ServiceAccountTokenNodeBindingValidation} {
		t.Run(string(g), func(t *testing.T) {
			if _, err := NewRelease("1.37", string(g)+"=true"); err != nil {
				t.Errorf("1.37 refuses %s=true: %v", g, err)
			}
			_, err := NewRelease("v1.38.0-beta.0", string(g)+"=true")
			want := "unrecognized feature gate: " + string(g) + " (kubelet 1.38: removed in 1.38, GA and always on since 1."
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("1.38: %v, want %q...", err, want)
			}
			r, err := NewRelease("1.38", "")
			if err != nil {
				t.Fatal(err)
			}
			if !r.Enabled(g) || listed(r.Gates, g) {
				t.Errorf("1.38: enabled %t, listed in %q", r.Enabled(g), r.Gates.String())
			}
		})
	}
	r37, _ := NewRelease("1.37", "")
	r38, _ := NewRelease("1.38", "")
	if !reflect.DeepEqual(r37.IssuerConfig(), r38.IssuerConfig()) || !r38.TokenClaims().JTI || !r38.TokenClaims().PodNodeInfo {
		t.Errorf("token issuer 1.37 %+v, 1.38 %+v: want the same, with jti and the node's claims", r37.IssuerConfig(), r38.IssuerConfig())
	}
}

// SELinuxMount is GA and still settable in v1.38.0-beta.0 ("Lock in
// 1.38"), MutableCSINodeAllocatableCount still there ("remove in 1.38"):
// the two to check again at 1.38.0 (README, "Adding a release").
func TestGatesToWatchAt138(t *testing.T) {
	if _, err := NewRelease("1.38", "SELinuxMount=false"); err != nil {
		t.Errorf("SELinuxMount=false at 1.38: %v", err)
	}
	if _, err := NewRelease("1.38", "MutableCSINodeAllocatableCount=true"); err != nil {
		t.Errorf("MutableCSINodeAllocatableCount=true at 1.38: %v", err)
	}
}

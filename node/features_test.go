package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// gateReleases is the gate table (docs/kubelet.md §19.1) written out, one
// letter per release from 1.30 to 1.37: o on (settable), f off (settable),
// L on and locked (GA), - the release does not have the gate. A newer
// release keeps a gate's last letter until a letter is written for it.
var gateReleases = map[Gate]string{
	//                                 30......37
	SELinuxMountReadWriteOncePod:            "ooooooLL",
	SELinuxMount:                            "fffffffo",
	SELinuxChangePolicy:                     "--foooLL",
	ReadWriteOncePod:                        "L-------",
	CSIVolumeHealth:                         "ffffffff",
	CSIServiceAccountTokenSecrets:           "-----oLL",
	MutableCSINodeAllocatableCount:          "---ffoLL",
	ServiceAccountTokenJTI:                  "ooLLLLLL",
	ServiceAccountTokenPodNodeInfo:          "ooLLLLLL",
	RecoverVolumeExpansionFailure:           "ffooLLLL",
	VolumeLimitScaling:                      "-----ffo",
	CSINodeExpandSecret:                     "L-------",
	PLEGOnDemandRelist:                      "------oL",
	TokenRequestServiceAccountUIDValidation: "----oooo",
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
				wantOn := c == 'o' || c == 'L'
				if def.Enabled(g) != wantOn {
					t.Errorf("default %t, want %t", def.Enabled(g), wantOn)
				}
				if listed(def, g) != (c != '-') {
					t.Errorf("String %q: listed %t, want %t", def.String(), listed(def, g), c != '-')
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
		"SELinuxMount=false,SELinuxMountReadWriteOncePod=true,ServiceAccountTokenJTI=true,ServiceAccountTokenPodNodeInfo=true"
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
		{version: "", wantMinor: MaxMinor, wantDescribe: "kubelet " + DefaultVersion.String(), wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "v1.31.4", gates: "ServiceAccountTokenJTI=false", wantMinor: 31,
			wantDescribe: "kubelet 1.31 (feature gates ServiceAccountTokenJTI=false)", wantClaims: TokenClaims{PodNodeInfo: true}},
		{version: "1.36", gates: "SELinuxMount=true,CSIVolumeHealth=true,SELinuxChangePolicy=true", wantMinor: 36,
			wantDescribe: "kubelet 1.36 (feature gates CSIVolumeHealth=true,SELinuxMount=true)", wantClaims: TokenClaims{JTI: true, PodNodeInfo: true}},
		{version: "1.29", wantErr: `kubelet version "1.29": want 1.30 to ` + DefaultVersion.String()},
		{version: "1.37", gates: "ReadWriteOncePod=true", wantErr: "unrecognized feature gate: ReadWriteOncePod (kubelet 1.37)"},
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
			if r.Minor != tc.wantMinor || r.Gates.Version() != r.Version || !r.valid() {
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
	if want := "1.30 to " + DefaultVersion.String(); SupportedReleases() != want {
		t.Errorf("SupportedReleases = %q, want %q", SupportedReleases(), want)
	}
	if d := DefaultRelease(); d.Minor != MaxMinor || d.Describe() != "kubelet "+DefaultVersion.String() {
		t.Errorf("DefaultRelease = %s", d.Describe())
	}
	if (Release{}).valid() {
		t.Errorf("the zero Release is valid")
	}
}

// The gate table is open-ended: a release after the newest has every gate
// as the newest has it, so that adding a release (README, "Adding a
// release") means raising MaxMinor and adding a row only for a gate that
// changes in it, not extending every row.
func TestGateTableOpenEnded(t *testing.T) {
	newest, err := NewFeatureGates(DefaultVersion, "")
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
	if rs := Releases(); len(rs) != MaxMinor-MinMinor+1 || rs[0].Minor != MinMinor || rs[len(rs)-1] != DefaultVersion {
		t.Errorf("Releases() = %v", rs)
	}
}

package release

import (
	"fmt"
	"testing"
)

func TestParseVersion(t *testing.T) {
	newest, next := Version{Minor: MaxMinor}.String(), fmt.Sprintf("1.%d", MaxMinor+1)
	tests := []struct {
		in      string
		want    int
		wantErr string
	}{
		{"1.36", 36, ""},
		{"v1.36", 36, ""},
		{"v1.36.3", 36, ""},
		{"1.30", 30, ""},
		{"1.37", 37, ""},
		{"1.38", 38, ""},
		{"v1.38.0-beta.0", 38, ""},
		{"v1.38.0", 38, ""},
		{"1.29", 0, `kubelet version "1.29": want 1.30 to ` + newest},
		{next, 0, `kubelet version "` + next + `": want 1.30 to ` + newest},
		{"2.1", 0, `kubelet version "2.1": want 1.30 to ` + newest},
		{"1", 0, `kubelet version "1": want 1.30 to ` + newest},
		{"1.x", 0, `kubelet version "1.x": want 1.30 to ` + newest},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || v.Minor != tc.want {
				t.Errorf("ParseVersion = %+v, %v; want minor %d", v, err, tc.want)
			}
		})
	}
}

// docs/kubelet.md §12: uncertain capability errors since 1.36.
func TestCapabilityErrorsUncertain(t *testing.T) {
	for minor, want := range map[int]bool{30: false, 35: false, 36: true, 37: true} {
		if got := (Version{Minor: minor}).CapabilityErrorsUncertain(); got != want {
			t.Errorf("1.%d: %t, want %t", minor, got, want)
		}
	}
	if s := (Version{Minor: 36}).String(); s != "1.36" {
		t.Errorf("String = %q", s)
	}
}

// Every release rule that is not a gate, release by release to the newest,
// as docs/kubelet.md states it (section named per rule).
func TestVersionRules(t *testing.T) {
	rules := []struct {
		name  string
		rule  func(Version) bool
		first int // the first release with the rule (0: none)
		last  int // the last release with it (0: still there in the newest)
	}{
		{"CapabilityErrorsUncertain (12)", Version.CapabilityErrorsUncertain, 36, 0},
		{"KeepsTargetOnFailedRemount (5)", Version.KeepsTargetOnFailedRemount, 36, 0},
		{"SELinuxMountAnyAccessMode (6.2)", Version.SELinuxMountAnyAccessMode, 32, 0},
		{"AsksVolumeCondition (11)", Version.AsksVolumeCondition, 30, 36},
		{"StatsWithoutUsageForCondition (11)", Version.StatsWithoutUsageForCondition, 32, 0},
		{"ExpansionByClaimStatus (11)", Version.ExpansionByClaimStatus, 31, 0},
		{"TokenRequestKeepsUID (4.2)", Version.TokenRequestKeepsUID, 34, 0},
		{"CSIDriverAttachRequiredPath (14.3)", Version.CSIDriverAttachRequiredPath, 38, 0},
		{"CSINodeOwnerFromLiveNode (13)", Version.CSINodeOwnerFromLiveNode, 38, 0},
	}
	for _, r := range rules {
		for minor := MinMinor; minor <= MaxMinor; minor++ {
			want := minor >= r.first && (r.last == 0 || minor <= r.last)
			if got := r.rule(Version{Minor: minor}); got != want {
				t.Errorf("%s at 1.%d = %v, want %v", r.name, minor, got, want)
			}
		}
	}
}

// Each release rule (docs/kubelet.md §19.2) at its boundary: the last
// release without it and the first with it (or the last with it and the
// first without).
func TestVersionRuleBoundaries(t *testing.T) {
	tests := []struct {
		name  string
		rule  func(Version) bool
		minor int
		want  bool
	}{
		{"CapabilityErrorsUncertain", Version.CapabilityErrorsUncertain, 35, false},
		{"CapabilityErrorsUncertain", Version.CapabilityErrorsUncertain, 36, true},
		{"KeepsTargetOnFailedRemount", Version.KeepsTargetOnFailedRemount, 35, false},
		{"KeepsTargetOnFailedRemount", Version.KeepsTargetOnFailedRemount, 36, true},
		{"SELinuxMountAnyAccessMode", Version.SELinuxMountAnyAccessMode, 31, false},
		{"SELinuxMountAnyAccessMode", Version.SELinuxMountAnyAccessMode, 32, true},
		{"AsksVolumeCondition", Version.AsksVolumeCondition, 36, true},
		{"AsksVolumeCondition", Version.AsksVolumeCondition, 37, false},
		{"StatsWithoutUsageForCondition", Version.StatsWithoutUsageForCondition, 31, false},
		{"StatsWithoutUsageForCondition", Version.StatsWithoutUsageForCondition, 32, true},
		{"ExpansionByClaimStatus", Version.ExpansionByClaimStatus, 30, false},
		{"ExpansionByClaimStatus", Version.ExpansionByClaimStatus, 31, true},
		{"TokenRequestKeepsUID", Version.TokenRequestKeepsUID, 33, false},
		{"TokenRequestKeepsUID", Version.TokenRequestKeepsUID, 34, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/1.%d", tc.name, tc.minor), func(t *testing.T) {
			if got := tc.rule(Version{Minor: tc.minor}); got != tc.want {
				t.Errorf("%t, want %t", got, tc.want)
			}
		})
	}
}

// releases.txt: 1.30 to 1.38, 1.38 a pre-release (marked in its label),
// the default the newest that shipped; a malformed file is refused.
func TestReleasesFile(t *testing.T) {
	if MinMinor != 30 || MaxMinor != 38 || DefaultVersion.Minor != 37 {
		t.Errorf("MinMinor %d, MaxMinor %d, default %v", MinMinor, MaxMinor, DefaultVersion)
	}
	if got := (Version{Minor: 38}).Label(); got != "1.38 (pre-release: v1.38.0-beta.0)" {
		t.Errorf("1.38 label %q", got)
	}
	if got := (Version{Minor: 37}).Label(); got != "1.37" || (Version{Minor: 37}).PreRelease() != "" {
		t.Errorf("1.37 label %q", got)
	}
	if tags := ClaimedTags(); len(tags) != 9 || tags[7] != "v1.37.2" || tags[8] != "v1.38.0-beta.0" {
		t.Errorf("ClaimedTags = %v", tags)
	}
	for text, want := range map[string]string{
		"":                    "no release",
		"v1.30.1\nv1.32.0\n":  "line 2: v1.32.0 after v1.30.1: want one release per minor, oldest first",
		"v1.30\n":             `line 1: "v1.30" is not a tag like v1.37.2 or v1.38.0-beta.0`,
		"# c\nv1.30.x-rc.1\n": `line 2: "v1.30.x-rc.1" is not a tag like v1.37.2 or v1.38.0-beta.0`,
	} {
		if _, err := parseReleases(text); err == nil || err.Error() != want {
			t.Errorf("parseReleases(%q) = %v, want %q", text, err, want)
		}
	}
	rs, err := parseReleases("v1.30.2\nv1.31.0-rc.1\n")
	if err != nil || defaultVersion(rs).Minor != 30 || !rs[1].pre {
		t.Errorf("parseReleases = %+v, %v", rs, err)
	}
}

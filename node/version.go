package node

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is the kubelet release whose behaviour is reproduced. Every
// version-dependent rule asks it, so that the rules sit in one place.
type Version struct {
	Minor int
}

// Supported releases.
const (
	MinMinor = 30
	MaxMinor = 37
)

// DefaultVersion is the newest release simulated.
var DefaultVersion = Version{Minor: MaxMinor}

// ParseVersion reads "1.36", "v1.36" or "v1.36.3".
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(s, "v")
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

func (v Version) String() string { return fmt.Sprintf("1.%d", v.Minor) }

// CapabilityErrorsUncertain: since 1.36 a non-final NodeGetCapabilities
// error is an UncertainProgressError (nodeGetCapabilities, csi_client.go).
func (v Version) CapabilityErrorsUncertain() bool { return v.Minor >= 36 }

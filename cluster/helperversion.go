package cluster

import (
	"debug/buildinfo"
	"fmt"
	"strconv"
	"strings"
)

// HelperVersion is the release of a helper's kube-apiserver: the
// k8s.io/kubernetes module it was built with, read from the executable's
// build information (cheaper than running it: the run's start-up is the
// API server's). "" when the file has none.
func HelperVersion(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path != "k8s.io/kubernetes" {
			continue
		}
		if d.Replace != nil {
			return d.Replace.Version
		}
		return d.Version
	}
	return ""
}

// minorOf is 30 for "v1.30.14"; false when it is not a 1.X release.
func minorOf(version string) (int, bool) {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		return 0, false
	}
	m, err := strconv.Atoi(parts[1])
	return m, err == nil
}

// maxKubeletSkew is how many minor releases a kubelet may be older than
// its kube-apiserver (the version skew policy since 1.28); it is never
// newer.
const maxKubeletSkew = 3

// SkewNote says how the API server's release (HelperVersion) differs from
// the simulated kubelet's minor release, and what that changes; "" when
// both are of the same minor release. The run goes on either way: the
// flags the simulator gives kube-apiserver exist from 1.30 on.
func SkewNote(apiserver string, kubeletMinor int) string {
	m, ok := minorOf(apiserver)
	what := "its TokenRequest claims, validation and defaulting are its own release's, not the kubelet's"
	how := fmt.Sprintf("`make apiserver-helper KUBE_VERSION=v1.%d.N` builds a helper of the kubelet's release, $%s picks it", kubeletMinor, HelperEnv)
	switch {
	case !ok:
		return fmt.Sprintf("the helper's kube-apiserver release is unknown (no build information), the simulated kubelet is 1.%d: %s; %s", kubeletMinor, what, how)
	case m == kubeletMinor:
		return ""
	case m < kubeletMinor:
		return fmt.Sprintf("kube-apiserver %s is older than the simulated kubelet 1.%d (outside the version skew policy: a kubelet is never newer than its API server): %s; %s", apiserver, kubeletMinor, what, how)
	case m-kubeletMinor > maxKubeletSkew:
		return fmt.Sprintf("kube-apiserver %s is %d minor releases newer than the simulated kubelet 1.%d (outside the version skew policy: %d at most): %s; %s", apiserver, m-kubeletMinor, kubeletMinor, maxKubeletSkew, what, how)
	}
	return fmt.Sprintf("kube-apiserver %s is %d minor releases newer than the simulated kubelet 1.%d (within the version skew policy): %s", apiserver, m-kubeletMinor, kubeletMinor, what)
}

package realkubelet

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// tokensKey is where the kubelet puts service-account tokens.
const tokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

var (
	jwtToken = regexp.MustCompile(`"token":"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"`)
	rfc3339  = regexp.MustCompile(`"expirationTimestamp":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"`)
)

// normalize is a call as compared: the root dir of each side replaced by
// <root> (the kubelet keeps /var/lib/kubelet, each simulator run has a
// fresh one), service-account tokens and their expiry by shape (a JWT, an
// RFC 3339 time in whole seconds), as the differential test compares them;
// everything else byte for byte.
func normalize(c recorder.Call, root string) string {
	req := map[string]any{}
	for k, v := range c.Request {
		req[k] = v
	}
	for _, field := range []string{"volume_context", "secrets"} {
		m, ok := req[field].(map[string]any)
		if !ok {
			continue
		}
		if s, ok := m[tokensKey].(string); ok {
			n := map[string]any{}
			for k, v := range m {
				n[k] = v
			}
			s = jwtToken.ReplaceAllString(s, `"token":"<JWT>"`)
			n[tokensKey] = rfc3339.ReplaceAllString(s, `"expirationTimestamp":"<RFC3339>"`)
			req[field] = n
		}
	}
	c.Request = req
	return strings.ReplaceAll(c.Line(), root+"/", "<root>/")
}

func normalizeAll(calls []recorder.Call, root string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = normalize(c, root)
	}
	return out
}

// compareStreams returns "" when both streams are equal, else both streams
// with the lines that differ marked.
func compareStreams(kubelet, sim []string) string {
	if strings.Join(kubelet, "\n") == strings.Join(sim, "\n") {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "whole kubelet: %d calls, csi-kubelet-sim: %d calls\n", len(kubelet), len(sim))
	for i := 0; i < max(len(kubelet), len(sim)); i++ {
		k, s := "(none)", "(none)"
		if i < len(kubelet) {
			k = kubelet[i]
		}
		if i < len(sim) {
			s = sim[i]
		}
		if k == s {
			fmt.Fprintf(&sb, "  %2d same    %s\n", i, k)
			continue
		}
		fmt.Fprintf(&sb, "- %2d kubelet %s\n+ %2d sim     %s\n", i, k, i, s)
	}
	return sb.String()
}

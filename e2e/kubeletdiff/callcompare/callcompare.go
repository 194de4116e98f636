// Package callcompare is how the differential test (kubeletdiff) and the
// whole-kubelet test (e2e/realkubelet) compare the recording driver's two
// streams of calls: each call normalized to a line (tokens by shape, the
// root dir of each side as <root>), then a line diff with the fields that
// differ.
package callcompare

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// TokensKey is where the kubelet puts service-account tokens, in
// volume_context or (serviceAccountTokenInSecrets) in secrets.
const TokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

var (
	tokenField = regexp.MustCompile(`"token":"([^"\\]*)"`)
	jwtShape   = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)
	expField   = regexp.MustCompile(`"expirationTimestamp":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)"`)
)

// NormalizeTokens replaces, inside the tokens value (a JSON string written
// by the kubelet), each JWT-shaped token by <JWT> and each RFC 3339
// timestamp with whole seconds in UTC by <RFC3339>. Everything else of the
// value (audiences as keys, key order, field names, escaping) stays and is
// compared byte for byte; a token or timestamp of another shape stays too,
// and so differs.
func NormalizeTokens(v string) string {
	v = tokenField.ReplaceAllStringFunc(v, func(m string) string {
		tok := tokenField.FindStringSubmatch(m)[1]
		if jwtShape.MatchString(tok) {
			return `"token":"<JWT>"`
		}
		return m
	})
	return expField.ReplaceAllString(v, `"expirationTimestamp":"<RFC3339>"`)
}

// Normalize is a call as compared: the tokens by shape, and root (a root
// dir that differs between the two sides; "" for none) written <root>;
// nothing else touched.
func Normalize(c recorder.Call, root string) string {
	req := map[string]any{}
	for k, v := range c.Request {
		req[k] = v
	}
	for _, field := range []string{"volume_context", "secrets"} {
		m, ok := req[field].(map[string]any)
		if !ok {
			continue
		}
		if s, ok := m[TokensKey].(string); ok {
			n := map[string]any{}
			for k, v := range m {
				n[k] = v
			}
			n[TokensKey] = NormalizeTokens(s)
			req[field] = n
		}
	}
	c.Request = req
	if root == "" {
		return c.Line()
	}
	return strings.ReplaceAll(c.Line(), root+"/", "<root>/")
}

// NormalizeAll is Normalize of each call.
func NormalizeAll(calls []recorder.Call, root string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = Normalize(c, root)
	}
	return out
}

// Diff is a line diff (longest common subsequence) of the kubelet's stream
// (named kubelet in the header: the kubelet code, the whole kubelet) and
// the simulator's, with, for each kubelet line replaced by a simulator line
// of the same method, the fields that differ.
func Diff(kubelet string, a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d calls, csi-kubelet-sim: %d calls\n", kubelet, n, m)
	var dels, adds []string
	flush := func() {
		for k := 0; k < max(len(dels), len(adds)); k++ {
			if k < len(dels) {
				fmt.Fprintf(&sb, "- kubelet %s\n", dels[k])
			}
			if k < len(adds) {
				fmt.Fprintf(&sb, "+ sim     %s\n", adds[k])
			}
			if k < len(dels) && k < len(adds) && method(dels[k]) == method(adds[k]) {
				for _, d := range fieldDiff(dels[k], adds[k]) {
					fmt.Fprintf(&sb, "      %s\n", d)
				}
			}
		}
		dels, adds = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			flush()
			fmt.Fprintf(&sb, "  same    %s\n", summary(a[i]))
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			adds = append(adds, b[j])
			j++
		default:
			dels = append(dels, a[i])
			i++
		}
	}
	flush()
	return sb.String()
}

func decode(line string) map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(line), &m)
	return m
}

func method(line string) string {
	s, _ := decode(line)["method"].(string)
	return s
}

// summary is a line shortened for the unchanged part of a diff.
func summary(line string) string {
	m := decode(line)
	s, _ := m["method"].(string)
	s = s[strings.LastIndex(s, "/")+1:]
	if req, ok := m["request"].(map[string]any); ok {
		for _, k := range []string{"volume_id", "target_path", "staging_target_path", "volume_path"} {
			if v, ok := req[k].(string); ok && v != "" {
				s += " " + k + "=" + v
				break
			}
		}
	}
	return s
}

// fieldDiff lists the leaves that differ between two JSON lines.
func fieldDiff(a, b string) []string {
	var out []string
	walkDiff("", decode(a), decode(b), &out)
	return out
}

func walkDiff(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			av, ain := am[k]
			bv, bin := bm[k]
			p := path + "." + k
			switch {
			case !ain:
				*out = append(*out, fmt.Sprintf("%s: kubelet has none, sim has %s", p, recorder.Canonical(bv)))
			case !bin:
				*out = append(*out, fmt.Sprintf("%s: kubelet has %s, sim has none", p, recorder.Canonical(av)))
			default:
				walkDiff(p, av, bv, out)
			}
		}
		return
	}
	if ca, cb := recorder.Canonical(a), recorder.Canonical(b); ca != cb {
		*out = append(*out, fmt.Sprintf("%s: kubelet %s, sim %s", strings.TrimPrefix(path, "."), ca, cb))
	}
}

// StuckError is, of the last line of log with prefix + " for volume ",
// what follows the volume's name (the kubelet names it by its unique name
// and its pod, the simulator by its spec name): the text after the first
// " : " on. "" if there is none.
func StuckError(prefix, log string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		_, rest, ok := strings.Cut(lines[i], prefix+" for volume ")
		if !ok {
			continue
		}
		if _, e, ok := strings.Cut(rest, " : "); ok {
			// A structured klog line ("message" err="...") ends the
			// message at the quote.
			e, _, _ = strings.Cut(e, `" err="`)
			return strings.TrimSpace(e)
		}
	}
	return ""
}

// SimMessages is what the simulator said went wrong: its stderr (the
// first failure), then the text of every warning in its JSON trace, one per
// line (a run can fail more than once: a republish, then the teardown).
func SimMessages(stdout, stderr string) string {
	var b strings.Builder
	b.WriteString(stderr)
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct{ Level, Text string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Level == "warning" && ev.Text != "" {
			b.WriteString("\n" + ev.Text)
		}
	}
	return b.String()
}

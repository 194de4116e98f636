package tokencmd

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

type TokensClaimsOptions struct {
	session.Streams
	session.OutputFlag
	file string
}

func (o *TokensClaimsOptions) Complete(args []string) error {
	if len(args) != 1 {
		return session.WithCode(session.ExitUsage, fmt.Errorf("tokens claims: want one FILE argument (a run's -o json output, or - for stdin), got %d", len(args)))
	}
	o.file = args[0]
	return nil
}

func (o *TokensClaimsOptions) Validate() error { return o.ValidateOutput() }

func (o *TokensClaimsOptions) Run(ctx context.Context) error {
	in, name := o.In, "stdin"
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return session.WithCode(session.ExitUsage, fmt.Errorf("tokens claims: %w", err))
		}
		defer f.Close()
		in, name = f, o.file
	}
	toks, err := readHandedOut(in, name)
	if err != nil {
		return session.WithCode(session.ExitUsage, err)
	}
	if len(toks) == 0 {
		return session.WithCode(session.ExitUsage, fmt.Errorf("tokens claims: no token in %s: the run handed out none (its CSIDriver has no tokenRequests?), or it is not the output of run -o json", name))
	}
	for _, t := range toks {
		if o.Output == "json" {
			if err := writeClaimsJSON(o.Out, t); err != nil {
				return err
			}
			continue
		}
		writeClaimsText(o.Out, t)
	}
	return nil
}

// handedOutToken is one token of the input, decoded.
type handedOutToken struct {
	rec tokens.HandedOut
	dec *tokens.Decoded // nil when rec.Error
}

// readHandedOut reads the JSON lines: the token records, else (a trace
// of an older run, or one with --show-secrets) the tokens of the
// NodePublishVolume calls that are in the clear.
func readHandedOut(in io.Reader, name string) ([]handedOutToken, error) {
	var recs, fromCalls []handedOutToken
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			return nil, fmt.Errorf("%s line %d: not a JSON record (%v): read the output of run -o json", name, n, err)
		}
		switch head.Kind {
		case tokens.RecordKind:
			var rec tokens.HandedOut
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				return nil, fmt.Errorf("%s line %d: token record: %w", name, n, err)
			}
			recs = append(recs, decodeRecord(rec))
		case "call":
			fromCalls = append(fromCalls, callTokens(line)...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(recs) > 0 {
		return recs, nil
	}
	return fromCalls, nil
}

// decodeRecord parses a record's claims as Decode would.
func decodeRecord(rec tokens.HandedOut) handedOutToken {
	if rec.Error != "" || len(rec.Claims) == 0 {
		return handedOutToken{rec: rec}
	}
	// A token's parts again, so that the one parser reads them; the
	// signature is not there.
	d, err := tokens.Decode(b64(rec.Header) + "." + b64(rec.Claims) + ".")
	if err != nil {
		rec.Error = err.Error()
		return handedOutToken{rec: rec}
	}
	return handedOutToken{rec: rec, dec: d}
}

// callTokens are the tokens in the clear in a NodePublishVolume call's
// volume_context or secrets (a trace made with --show-secrets).
func callTokens(line string) []handedOutToken {
	var c struct {
		Time      time.Time `json:"time"`
		Component string    `json:"component"`
		Operation string    `json:"operation"`
		Volume    string    `json:"volume"`
		Pod       string    `json:"pod"`
		Method    string    `json:"method"`
		Request   struct {
			VolumeContext map[string]string `json:"volume_context"`
			Secrets       map[string]string `json:"secrets"`
		} `json:"request"`
	}
	if json.Unmarshal([]byte(line), &c) != nil || c.Method != "NodePublishVolume" {
		return nil
	}
	var out []handedOutToken
	for _, val := range []string{c.Request.VolumeContext[csiclient.TokensKey], c.Request.Secrets[csiclient.TokensKey]} {
		var m map[string]struct {
			Token      string    `json:"token"`
			Expiration time.Time `json:"expirationTimestamp"`
		}
		if json.Unmarshal([]byte(val), &m) != nil {
			continue
		}
		for aud, st := range sortedTokens(m) {
			d, err := tokens.Decode(st.Token)
			if err != nil {
				continue // redacted: a fingerprint, not a token
			}
			rec := tokens.HandedOut{Kind: tokens.RecordKind, Time: c.Time, Component: c.Component, Operation: c.Operation, Volume: c.Volume, Pod: c.Pod,
				Audience: aud, Fingerprint: csiclient.TokenFingerprint(st.Token), Expiration: st.Expiration, Header: d.Header, Claims: d.Claims}
			out = append(out, handedOutToken{rec: rec, dec: d})
		}
	}
	return out
}

// sortedTokens yields the tokens map by audience, in order.
func sortedTokens[V any](m map[string]V) func(func(string, V) bool) {
	return func(yield func(string, V) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// writeClaimsText prints one token: a line naming it, then its claims.
func writeClaimsText(w io.Writer, t handedOutToken) {
	esc := csiclient.Redactor{}.Text
	r := t.rec
	aud := fmt.Sprintf("%q", r.Audience)
	if r.Audience == "" {
		aud = `"" (the API server's audiences)`
	}
	fmt.Fprintf(w, "%s volume %s, %s at %s: audience %s, %s\n", esc(r.Pod), esc(r.Volume), esc(r.Operation), r.Time.UTC().Format("15:04:05.000"), esc(aud), esc(r.Fingerprint))
	row := func(k, v string) { fmt.Fprintf(w, "  %-15s %s\n", k, esc(v)) }
	if t.dec == nil {
		row("error", r.Error)
		return
	}
	d := t.dec
	row("header", string(d.Header))
	row("iss", d.Issuer)
	row("sub", d.Subject)
	row("aud", strings.Join(d.Audience, ", "))
	row("iat", stampOrNone(d.IssuedAt))
	row("nbf", stampOrNone(d.NotBefore))
	exp := stampOrNone(d.Expiry)
	if !d.Expiry.IsZero() && !d.IssuedAt.IsZero() {
		exp += fmt.Sprintf(" (%s after iat)", d.Expiry.Sub(d.IssuedAt))
	}
	row("exp", exp)
	if d.ID != "" {
		row("jti", d.ID)
	}
	k := d.Kubernetes
	if k.Pod != nil {
		row("pod", k.Namespace+"/"+k.Pod.Name+uidText(k.Pod.UID))
	}
	if k.Node != nil {
		row("node", k.Node.Name+uidText(k.Node.UID))
	}
	row("serviceaccount", k.Namespace+"/"+k.ServiceAccount.Name+uidText(k.ServiceAccount.UID))
	if wa := k.WarnAfter; wa != nil {
		row("warnafter", stampOrNone(time.Unix(*wa, 0)))
	}
}

// writeClaimsJSON prints one token as an object with the times decoded.
func writeClaimsJSON(w io.Writer, t handedOutToken) error {
	r := t.rec
	obj := map[string]any{"pod": r.Pod, "volume": r.Volume, "operation": r.Operation, "time": r.Time, "audience": r.Audience,
		"fingerprint": r.Fingerprint, "service_account": r.ServiceAccount, "expiration_timestamp": r.Expiration}
	if t.dec == nil {
		obj["error"] = r.Error
	} else {
		obj["header"], obj["claims"] = t.dec.Header, t.dec.Claims
		obj["times"] = map[string]string{"iat": stampOrNone(t.dec.IssuedAt), "nbf": stampOrNone(t.dec.NotBefore), "exp": stampOrNone(t.dec.Expiry)}
	}
	_, err := fmt.Fprintf(w, "%s\n", csiclient.Redactor{}.JSONLine(obj))
	return err
}

func stampOrNone(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339)
}

func uidText(uid string) string {
	if uid == "" {
		return ""
	}
	return " (uid " + uid + ")"
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

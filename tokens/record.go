package tokens

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// RecordKind is the kind of -o json's record of a token the kubelet put in
// a NodePublishVolume (volume_context or secrets,
// csi.storage.k8s.io/serviceAccount.tokens). The call's record shows the
// token as its fingerprint; this record carries what the token says, its
// decoded header and claims, and never the token or its signature: the
// claims are what a driver checks (audience, expiry, the bound pod), and
// without the signature they cannot be replayed. `tokens claims` reads it.
const RecordKind = "token"

// HandedOut is that record.
type HandedOut struct {
	SchemaVersion  int             `json:"schemaVersion"`
	Kind           string          `json:"kind"`
	Time           time.Time       `json:"time"`
	Component      string          `json:"component"`
	Operation      string          `json:"operation"`
	Volume         string          `json:"volume,omitempty"`
	Pod            string          `json:"pod,omitempty"`
	ServiceAccount string          `json:"service_account"`
	Audience       string          `json:"audience"`
	Fingerprint    string          `json:"fingerprint"`
	Expiration     time.Time       `json:"expiration_timestamp"`
	Header         json.RawMessage `json:"header,omitempty"`
	Claims         json.RawMessage `json:"claims,omitempty"`
	// Error: the token could not be decoded (an API server's opaque
	// token), so it has no header and claims here.
	Error string `json:"error,omitempty"`
}

// Recorder is the kubelet's token source as -o json sees it: every token
// the kubelet asks for a volume (from its cache or fresh) is written as a
// HandedOut record before the call that carries it.
type Recorder struct {
	Next TokenGetter
	Out  interface{ Object(any) }
}

func (r Recorder) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	resp, err := r.Next.Token(ctx, namespace, sa, req)
	if err == nil && resp != nil {
		r.Out.Object(handedOut(ctx, namespace, sa, req, resp))
	}
	return resp, err
}

// handedOut is the record of one token.
func handedOut(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest, resp *authenticationv1.TokenRequest) HandedOut {
	l := csiclient.LabelsFrom(ctx)
	rec := HandedOut{SchemaVersion: csiclient.SchemaVersion, Kind: RecordKind, Time: time.Now().UTC(),
		Component: l.Component, Operation: l.Operation, Volume: l.Volume, Pod: l.Pod,
		ServiceAccount: namespace + "/" + sa, Audience: strings.Join(req.Spec.Audiences, ","),
		Fingerprint: csiclient.TokenFingerprint(resp.Status.Token), Expiration: resp.Status.ExpirationTimestamp.UTC()}
	d, err := Decode(resp.Status.Token)
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	rec.Header, rec.Claims = d.Header, d.Claims
	return rec
}

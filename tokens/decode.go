package tokens

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// Decoded is what a token says about itself, read without its signature
// being checked: for showing the claims of a token the simulator's own
// kubelet received, never for trusting one (that is Verify).
type Decoded struct {
	// Header and Claims are the JOSE header and the payload as sent.
	Header json.RawMessage
	Claims json.RawMessage

	Issuer     string
	Subject    string
	Audience   []string
	ID         string
	Expiry     time.Time // zero when absent
	NotBefore  time.Time
	IssuedAt   time.Time
	Kubernetes KubernetesClaims
}

// Decode reads a compact JWS's header and payload; the signature is
// dropped unread.
func Decode(token string) (*Decoded, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a compact JWS: %d segments, want 3", len(parts))
	}
	hdr, err := decodeSegment("header", parts[0])
	if err != nil {
		return nil, err
	}
	claims, err := decodeSegment("claims", parts[1])
	if err != nil {
		return nil, err
	}
	var std josejwt.Claims
	var priv struct {
		Kubernetes *KubernetesClaims `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(claims, &std); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	if err := json.Unmarshal(claims, &priv); err != nil {
		return nil, fmt.Errorf("claims: kubernetes.io: %w", err)
	}
	d := &Decoded{Header: hdr, Claims: claims, Issuer: std.Issuer, Subject: std.Subject, ID: std.ID,
		Audience: []string(std.Audience), Expiry: numericTime(std.Expiry), NotBefore: numericTime(std.NotBefore), IssuedAt: numericTime(std.IssuedAt)}
	if priv.Kubernetes != nil {
		d.Kubernetes = *priv.Kubernetes
	}
	return d, nil
}

// decodeSegment is one base64url segment that must hold a JSON object.
func decodeSegment(what, seg string) (json.RawMessage, error) {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", what, err)
	}
	if obj == nil {
		return nil, errors.New(what + ": null")
	}
	return b, nil
}

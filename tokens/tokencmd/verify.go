package tokencmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

type TokensVerifyOptions struct {
	session.Streams
	KeyFiles  []string
	JWKSFile  string
	JWKSURL   string
	Audiences []string
	Issuer    string
	Now       timeFlag

	token string
	// notFile is the argument when it named no file and was taken as
	// the token: a token that is no JWT at all was perhaps a file name.
	notFile string
}

func NewTokensVerifyOptions(s session.Streams) *TokensVerifyOptions {
	return &TokensVerifyOptions{Streams: s}
}

func (o *TokensVerifyOptions) Complete(args []string) error {
	if len(args) != 1 {
		return session.WithCode(session.ExitUsage, fmt.Errorf("tokens verify: want one TOKEN argument (or - for stdin), got %d", len(args)))
	}
	tok, err := o.readToken(args[0])
	if err != nil {
		return err
	}
	o.token = strings.TrimSpace(tok)
	if o.token == "" {
		return session.WithCode(session.ExitUsage, errors.New("tokens verify: empty token"))
	}
	return nil
}

// readToken is the token an argument gives: stdin for -, the content of
// an existing file (a token saved with > token.jwt), else the argument
// itself.
func (o *TokensVerifyOptions) readToken(arg string) (string, error) {
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(o.In, 1<<20))
		if err != nil {
			return "", session.WithCode(session.ExitUsage, fmt.Errorf("reading the token from stdin: %w", err))
		}
		return string(b), nil
	}
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		f, err := os.Open(arg)
		if err != nil {
			return "", session.WithCode(session.ExitUsage, fileError("tokens verify", err))
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		if err != nil {
			return "", session.WithCode(session.ExitUsage, fmt.Errorf("tokens verify: reading %s: %w", arg, err))
		}
		return string(b), nil
	}
	o.notFile = arg
	return arg, nil
}

func (o *TokensVerifyOptions) Validate() error {
	n := 0
	for _, set := range []bool{len(o.KeyFiles) > 0, o.JWKSFile != "", o.JWKSURL != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return session.WithCode(session.ExitUsage, errors.New("tokens verify: give exactly one of --key, --jwks or --jwks-url"))
	}
	if o.JWKSURL != "" {
		u, err := url.Parse(o.JWKSURL)
		if err != nil {
			return session.WithCode(session.ExitUsage, fmt.Errorf("--jwks-url: %w", err))
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return session.WithCode(session.ExitUsage, fmt.Errorf("--jwks-url %s: want an http or https URL", o.JWKSURL))
		}
		if !tokens.IsLoopbackHost(u.Hostname()) {
			return session.WithCode(session.ExitUsage, fmt.Errorf("--jwks-url %s: only loopback hosts are fetched", o.JWKSURL))
		}
	}
	return nil
}

func (o *TokensVerifyOptions) Run(ctx context.Context) error {
	keys, err := o.verificationKeys(ctx)
	if err != nil {
		return err
	}
	opts := tokens.VerifyOptions{Keys: keys, Audiences: o.Audiences, Issuer: o.Issuer, Now: time.Now}
	if !o.Now.t.IsZero() {
		now := o.Now.t
		opts.Now = func() time.Time { return now }
	}
	v, err := tokens.Verify(o.token, opts)
	if err != nil {
		hint := ""
		if o.notFile != "" && !looksLikeJWT(o.token) {
			hint = fmt.Sprintf(" (the argument is taken as the token: no file %s exists)", o.notFile)
		}
		return session.WithCode(session.ExitFailed, fmt.Errorf("invalid token: %w%s", err, hint))
	}
	if wa := v.WarnAfter(); !wa.IsZero() && opts.Now().After(wa) {
		session.WarnTo(o.Streams)(fmt.Sprintf("the token is past its kubernetes.io.warnafter %s: the API server accepts it but reports it as stale", wa.UTC().Format(time.RFC3339)))
	}
	b, err := json.MarshalIndent(struct {
		Header json.RawMessage `json:"header"`
		Claims json.RawMessage `json:"claims"`
	}{v.Header, v.Claims}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "%s\n", b)
	return err
}

func (o *TokensVerifyOptions) verificationKeys(ctx context.Context) ([]tokens.VerificationKey, error) {
	switch {
	case len(o.KeyFiles) > 0:
		pubs, err := loadPublicKeys("--key", o.KeyFiles)
		if err != nil {
			return nil, err
		}
		keys, err := tokens.PublicVerificationKeys(pubs...)
		if err != nil {
			return nil, session.WithCode(session.ExitUsage, fmt.Errorf("--key: %w", err))
		}
		return keys, nil
	case o.JWKSFile != "":
		b, err := os.ReadFile(o.JWKSFile)
		if err != nil {
			return nil, session.WithCode(session.ExitUsage, fileError("--jwks", err))
		}
		keys, err := tokens.ParseJWKS(b)
		if err != nil {
			return nil, session.WithCode(session.ExitUsage, fmt.Errorf("--jwks %s: %w", o.JWKSFile, err))
		}
		return keys, nil
	}
	b, err := fetchJWKS(ctx, o.JWKSURL)
	if err != nil {
		return nil, session.WithCode(session.ExitEnvironment, fmt.Errorf("--jwks-url %s: %w", o.JWKSURL, err))
	}
	keys, err := tokens.ParseJWKS(b)
	if err != nil {
		return nil, session.WithCode(session.ExitUsage, fmt.Errorf("--jwks-url %s: %w", o.JWKSURL, err))
	}
	return keys, nil
}

// fetchJWKS GETs a key set; redirects are not followed, so the loopback
// check on the URL holds.
func fetchJWKS(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// looksLikeJWT: three base64url parts, dot-separated (a path has a slash,
// a file name rarely two dots).
func looksLikeJWT(s string) bool {
	if strings.Count(s, ".") != 2 {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

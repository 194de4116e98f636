package main

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

const tokensUsage = `Service-account tokens as the kube-apiserver issues, publishes and checks them.

Usage:
  csi-kubelet-sim tokens keygen --private-key FILE [--public-key FILE] [--type rsa|ecdsa|p256|p384|p521]
  csi-kubelet-sim tokens mint   --service-account-key-file FILE --pod NAME --pod-uid UID [--audience AUD]... [flags]
  csi-kubelet-sim tokens jwks   --key FILE...
  csi-kubelet-sim tokens serve  --service-account-key-file FILE... [--issuer URL] [--addr 127.0.0.1:0]
  csi-kubelet-sim tokens verify (--key FILE... | --jwks FILE | --jwks-url URL) [--audience AUD] [--issuer URL] TOKEN|-

Run 'csi-kubelet-sim tokens COMMAND --help' for a command's flags.
`

// tokensCommand is one `tokens` subcommand in the options pattern:
// complete takes the positional arguments, validate checks the flags
// without touching files, run reads the files and does the work.
type tokensCommand interface {
	usage() string
	addFlags(fs *pflag.FlagSet)
	complete(args []string) error
	validate() error
	run(ctx context.Context) error
}

func runTokens(ctx context.Context, args []string, s streams) error {
	if len(args) == 0 {
		fmt.Fprint(s.Err, tokensUsage)
		return withCode(exitUsage, errors.New("tokens: a command is needed"))
	}
	var cmd tokensCommand
	switch args[0] {
	case "keygen":
		cmd = newTokensKeygenOptions(s)
	case "mint":
		cmd = newTokensMintOptions(s)
	case "jwks":
		cmd = newTokensJWKSOptions(s)
	case "serve":
		cmd = newTokensServeOptions(s)
	case "verify":
		cmd = newTokensVerifyOptions(s)
	case "help", "-h", "--help":
		fmt.Fprint(s.Out, tokensUsage)
		return nil
	default:
		fmt.Fprint(s.Err, tokensUsage)
		return withCode(exitUsage, fmt.Errorf("tokens: unknown command %q", args[0]))
	}
	fs := pflag.NewFlagSet("tokens "+args[0], pflag.ContinueOnError)
	fs.SetOutput(s.Err)
	cmd.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(s.Err, "Usage:\n  csi-kubelet-sim %s\n\nFlags:\n%s", cmd.usage(), fs.FlagUsages())
	}
	if err := fs.Parse(args[1:]); err != nil {
		return withCode(exitUsage, err)
	}
	if err := cmd.complete(fs.Args()); err != nil {
		return err
	}
	if err := cmd.validate(); err != nil {
		return err
	}
	return cmd.run(ctx)
}

// ---- keygen

type tokensKeygenOptions struct {
	streams
	Type       string
	PrivateKey string
	PublicKey  string
	Force      bool
}

func newTokensKeygenOptions(s streams) *tokensKeygenOptions {
	return &tokensKeygenOptions{streams: s, Type: "rsa"}
}

func (o *tokensKeygenOptions) usage() string {
	return "tokens keygen --private-key FILE [--public-key FILE] [--type rsa|ecdsa|p256|p384|p521]"
}

func (o *tokensKeygenOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Type, "type", o.Type, "key type: rsa (2048 bits), rsa3072, rsa4096, ecdsa or p256, p384, p521")
	fs.StringVar(&o.PrivateKey, "private-key", o.PrivateKey, "`FILE` to write the private key to, PEM, mode 0600 (the API server's --service-account-signing-key-file)")
	fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "`FILE` to write the public key to, PKIX PEM, mode 0644 (the API server's --service-account-key-file)")
	fs.BoolVar(&o.Force, "force", o.Force, "replace existing files")
}

func (o *tokensKeygenOptions) complete(args []string) error { return noArgs("tokens keygen", args) }

func (o *tokensKeygenOptions) validate() error {
	if o.PrivateKey == "" {
		return withCode(exitUsage, errors.New("tokens keygen: --private-key is required"))
	}
	if o.PublicKey != "" && filepath.Clean(o.PublicKey) == filepath.Clean(o.PrivateKey) {
		return withCode(exitUsage, errors.New("tokens keygen: --public-key and --private-key are the same file"))
	}
	for _, f := range []struct{ flag, path string }{{"--private-key", o.PrivateKey}, {"--public-key", o.PublicKey}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
			return withCode(exitUsage, fmt.Errorf("%s %s: no such directory %s", f.flag, f.path, filepath.Dir(f.path)))
		}
		if _, err := os.Lstat(f.path); err == nil && !o.Force {
			return withCode(exitUsage, fmt.Errorf("%s %s: file exists (--force replaces it)", f.flag, f.path))
		}
	}
	return nil
}

func (o *tokensKeygenOptions) run(context.Context) error {
	key, err := tokens.GenerateKey(o.Type)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--type: %w", err))
	}
	kid, err := tokens.KeyID(key)
	if err != nil {
		return err
	}
	if err := tokens.WriteKeyPair(o.PrivateKey, o.PublicKey, key); err != nil {
		return withCode(exitEnvironment, fmt.Errorf("writing the key pair: %w", err))
	}
	fmt.Fprintln(o.Out, kid)
	return nil
}

// ---- mint

type tokensMintOptions struct {
	streams
	KeyFile           string
	Issuer            string
	APIAudiences      []string
	Namespace         string
	ServiceAccount    string
	ServiceAccountUID string
	Pod               string
	PodUID            string
	Node              string
	NodeUID           string
	Audiences         []string
	Expiration        optionalInt64
	Output            string
	Now               timeFlag
}

func newTokensMintOptions(s streams) *tokensMintOptions {
	return &tokensMintOptions{streams: s, Issuer: tokens.DefaultIssuer, Namespace: "default", ServiceAccount: "default", Output: "text"}
}

func (o *tokensMintOptions) usage() string {
	return "tokens mint --service-account-key-file FILE --pod NAME --pod-uid UID [--audience AUD]... [flags]"
}

func (o *tokensMintOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyFile, "service-account-key-file", o.KeyFile, "PEM private key `FILE` that signs the token (RSA, or ECDSA P-256/384/521)")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the API server's --service-account-issuer `URL` (the token's iss)")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "the API server's --api-audiences, the audiences of a request without any (default: the issuer)")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "the pod's namespace")
	fs.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount, "the pod's serviceAccountName")
	fs.StringVar(&o.ServiceAccountUID, "service-account-uid", o.ServiceAccountUID, "the ServiceAccount's UID (default: derived from namespace and name, as run does)")
	fs.StringVar(&o.Pod, "pod", o.Pod, "the pod the token is bound to")
	fs.StringVar(&o.PodUID, "pod-uid", o.PodUID, "that pod's UID")
	fs.StringVar(&o.Node, "node", o.Node, "the pod's spec.nodeName (kubernetes.io.node claim; none when empty)")
	fs.StringVar(&o.NodeUID, "node-uid", o.NodeUID, "the Node's UID (empty: the claim carries the name only, as when the Node object is missing)")
	fs.StringArrayVar(&o.Audiences, "audience", o.Audiences, "an audience `AUD` of the request (repeatable; none: the API audiences, as a CSIDriver tokenRequest with audience \"\")")
	fs.Var(&o.Expiration, "expiration-seconds", "spec.expirationSeconds: `N` seconds (default: unset, which the API server makes 3600)")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "text (the token) or json (the TokenRequest status)")
	fs.Var(&o.Now, "now", "the API server's clock: a `TIME`, RFC 3339 (default: the current time); a time in the past makes an expired token")
}

func (o *tokensMintOptions) complete(args []string) error { return noArgs("tokens mint", args) }

func (o *tokensMintOptions) validate() error {
	switch {
	case o.KeyFile == "":
		return withCode(exitUsage, errors.New("tokens mint: --service-account-key-file is required"))
	case o.Namespace == "" || o.ServiceAccount == "":
		return withCode(exitUsage, errors.New("tokens mint: --namespace and --service-account may not be empty"))
	case o.Pod == "" || o.PodUID == "":
		return withCode(exitUsage, errors.New("tokens mint: --pod and --pod-uid are required (the kubelet binds every token to its pod)"))
	case o.NodeUID != "" && o.Node == "":
		return withCode(exitUsage, errors.New("tokens mint: --node-uid needs --node"))
	case o.Output != "text" && o.Output != "json":
		return withCode(exitUsage, fmt.Errorf("--output %q: want text or json", o.Output))
	}
	return nil
}

func (o *tokensMintOptions) run(ctx context.Context) error {
	key, err := tokens.LoadKey(o.KeyFile)
	if err != nil {
		return withCode(exitUsage, fileError("--service-account-key-file", err))
	}
	cfg := tokens.DefaultIssuerConfig()
	cfg.Issuer = o.Issuer
	cfg.APIAudiences = o.APIAudiences
	cfg.Key = key
	cfg.Warn = warnTo(o.streams)
	if !o.Now.t.IsZero() {
		now := o.Now.t
		cfg.Now = func() time.Time { return now }
	}
	if o.ServiceAccountUID != "" {
		cfg.ServiceAccountUID = func(string, string) (types.UID, bool) { return types.UID(o.ServiceAccountUID), true }
	}
	cfg.PodNode = func(string, string) (string, types.UID, bool) { return o.Node, types.UID(o.NodeUID), o.Node != "" }
	issuer, err := tokens.NewIssuer(cfg)
	if err != nil {
		return withCode(exitUsage, err)
	}
	// The request the kubelet makes for a CSIDriver tokenRequests entry
	// (KUBELET.md 4.1).
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         append([]string{}, o.Audiences...),
		ExpirationSeconds: o.Expiration.v,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: o.Pod, UID: types.UID(o.PodUID)},
	}}
	tr, err := issuer.Token(ctx, o.Namespace, o.ServiceAccount, req)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("TokenRequest: %w", err))
	}
	if o.Output == "json" {
		b, err := json.Marshal(tr.Status)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintln(o.Out, tr.Status.Token)
	return err
}

// ---- jwks

type tokensJWKSOptions struct {
	streams
	KeyFiles []string
}

func newTokensJWKSOptions(s streams) *tokensJWKSOptions { return &tokensJWKSOptions{streams: s} }

func (o *tokensJWKSOptions) usage() string { return "tokens jwks --key FILE..." }

func (o *tokensJWKSOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "key", o.KeyFiles, "PEM `FILE` of public or private keys (repeatable; every key of every file is published)")
}

func (o *tokensJWKSOptions) complete(args []string) error { return noArgs("tokens jwks", args) }

func (o *tokensJWKSOptions) validate() error {
	if len(o.KeyFiles) == 0 {
		return withCode(exitUsage, errors.New("tokens jwks: --key is required"))
	}
	return nil
}

func (o *tokensJWKSOptions) run(context.Context) error {
	keys, err := loadPublicKeys("--key", o.KeyFiles)
	if err != nil {
		return err
	}
	b, err := tokens.JWKS(keys...)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--key: %w", err))
	}
	_, err = fmt.Fprintf(o.Out, "%s\n", b)
	return err
}

// ---- serve

type tokensServeOptions struct {
	streams
	KeyFiles         []string
	Issuer           string
	JWKSURI          string
	Addr             string
	AllowNonLoopback bool
}

func newTokensServeOptions(s streams) *tokensServeOptions {
	return &tokensServeOptions{streams: s, Issuer: tokens.DefaultIssuer, Addr: "127.0.0.1:0"}
}

func (o *tokensServeOptions) usage() string {
	return "tokens serve --service-account-key-file FILE... [--issuer URL] [--addr 127.0.0.1:0]"
}

func (o *tokensServeOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles, "PEM `FILE` of public or private keys to publish (repeatable), as the API server's flag")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the API server's --service-account-issuer `URL` (the discovery document's issuer)")
	fs.StringVar(&o.JWKSURI, "jwks-uri", o.JWKSURI, "the API server's --service-account-jwks-uri `URL` (default: this server's "+tokens.JWKSPath+")")
	fs.StringVar(&o.Addr, "addr", o.Addr, "host:port to listen on (port 0: any free port)")
	fs.BoolVar(&o.AllowNonLoopback, "allow-non-loopback", o.AllowNonLoopback, "allow an --addr that is reachable from other hosts")
}

func (o *tokensServeOptions) complete(args []string) error { return noArgs("tokens serve", args) }

func (o *tokensServeOptions) validate() error {
	if len(o.KeyFiles) == 0 {
		return withCode(exitUsage, errors.New("tokens serve: --service-account-key-file is required"))
	}
	if !o.AllowNonLoopback {
		if err := tokens.CheckLoopbackAddr(o.Addr); err != nil {
			return withCode(exitUsage, fmt.Errorf("--addr: %w (--allow-non-loopback to serve on it anyway)", err))
		}
	}
	return nil
}

func (o *tokensServeOptions) run(ctx context.Context) error {
	keys, err := loadPublicKeys("--service-account-key-file", o.KeyFiles)
	if err != nil {
		return err
	}
	h, err := tokens.NewOIDCHandler(o.Issuer, o.JWKSURI, keys...)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if strings.HasPrefix(o.Issuer, "http:") {
		warnTo(o.streams)("the API server serves discovery only for an https issuer")
	}
	base, wait, err := tokens.ServeOIDC(ctx, o.Addr, h)
	if err != nil {
		return withCode(exitEnvironment, fmt.Errorf("--addr: %w", err))
	}
	fmt.Fprintln(o.Out, base)
	fmt.Fprintf(o.Err, "serving %s%s and %s%s for issuer %s until interrupted\n", base, tokens.OpenIDConfigPath, base, tokens.JWKSPath, o.Issuer)
	if err := wait(); err != nil {
		return withCode(exitEnvironment, fmt.Errorf("serve: %w", err))
	}
	return nil
}

// ---- verify

type tokensVerifyOptions struct {
	streams
	KeyFiles  []string
	JWKSFile  string
	JWKSURL   string
	Audiences []string
	Issuer    string
	Now       timeFlag

	token string
}

func newTokensVerifyOptions(s streams) *tokensVerifyOptions { return &tokensVerifyOptions{streams: s} }

func (o *tokensVerifyOptions) usage() string {
	return "tokens verify (--key FILE... | --jwks FILE | --jwks-url URL) [--audience AUD] [--issuer URL] TOKEN|-"
}

func (o *tokensVerifyOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "key", o.KeyFiles, "PEM `FILE` of public or private keys (repeatable)")
	fs.StringVar(&o.JWKSFile, "jwks", o.JWKSFile, "a JWKS `FILE`, such as the output of 'tokens jwks'")
	fs.StringVar(&o.JWKSURL, "jwks-url", o.JWKSURL, "fetch the JWKS from this `URL` (loopback hosts only, such as 'tokens serve')")
	fs.StringArrayVar(&o.Audiences, "audience", o.Audiences, "the token's aud must hold this audience `AUD` (repeatable: any of them; default: not checked)")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the token's iss must be this `URL` (default: not checked)")
	fs.Var(&o.Now, "now", "check exp, nbf and iat at this `TIME`, RFC 3339 (default: the current time)")
}

func (o *tokensVerifyOptions) complete(args []string) error {
	if len(args) != 1 {
		return withCode(exitUsage, fmt.Errorf("tokens verify: want one TOKEN argument (or - for stdin), got %d", len(args)))
	}
	o.token = args[0]
	if o.token == "-" {
		b, err := io.ReadAll(io.LimitReader(o.In, 1<<20))
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("reading the token from stdin: %w", err))
		}
		o.token = string(b)
	}
	o.token = strings.TrimSpace(o.token)
	if o.token == "" {
		return withCode(exitUsage, errors.New("tokens verify: empty token"))
	}
	return nil
}

func (o *tokensVerifyOptions) validate() error {
	n := 0
	for _, set := range []bool{len(o.KeyFiles) > 0, o.JWKSFile != "", o.JWKSURL != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return withCode(exitUsage, errors.New("tokens verify: give exactly one of --key, --jwks or --jwks-url"))
	}
	if o.JWKSURL != "" {
		u, err := url.Parse(o.JWKSURL)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--jwks-url: %w", err))
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return withCode(exitUsage, fmt.Errorf("--jwks-url %s: want an http or https URL", o.JWKSURL))
		}
		if !tokens.IsLoopbackHost(u.Hostname()) {
			return withCode(exitUsage, fmt.Errorf("--jwks-url %s: only loopback hosts are fetched", o.JWKSURL))
		}
	}
	return nil
}

func (o *tokensVerifyOptions) run(ctx context.Context) error {
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
		return withCode(exitFailed, fmt.Errorf("invalid token: %w", err))
	}
	if wa := v.WarnAfter(); !wa.IsZero() && opts.Now().After(wa) {
		warnTo(o.streams)(fmt.Sprintf("the token is past its kubernetes.io.warnafter %s: the API server accepts it but reports it as stale", wa.UTC().Format(time.RFC3339)))
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

func (o *tokensVerifyOptions) verificationKeys(ctx context.Context) ([]tokens.VerificationKey, error) {
	switch {
	case len(o.KeyFiles) > 0:
		pubs, err := loadPublicKeys("--key", o.KeyFiles)
		if err != nil {
			return nil, err
		}
		keys, err := tokens.PublicVerificationKeys(pubs...)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--key: %w", err))
		}
		return keys, nil
	case o.JWKSFile != "":
		b, err := os.ReadFile(o.JWKSFile)
		if err != nil {
			return nil, withCode(exitUsage, fileError("--jwks", err))
		}
		keys, err := tokens.ParseJWKS(b)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--jwks %s: %w", o.JWKSFile, err))
		}
		return keys, nil
	}
	b, err := fetchJWKS(ctx, o.JWKSURL)
	if err != nil {
		return nil, withCode(exitEnvironment, fmt.Errorf("--jwks-url %s: %w", o.JWKSURL, err))
	}
	keys, err := tokens.ParseJWKS(b)
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--jwks-url %s: %w", o.JWKSURL, err))
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

// ---- helpers

func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return withCode(exitUsage, fmt.Errorf("%s: unexpected arguments %v", cmd, args))
	}
	return nil
}

// loadPublicKeys reads every key of each file; errors are usage errors
// naming the flag and the file.
func loadPublicKeys(flag string, files []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range files {
		k, err := tokens.LoadPublicKeys(f)
		if err != nil {
			return nil, withCode(exitUsage, fileError(flag, err))
		}
		keys = append(keys, k...)
	}
	return keys, nil
}

// fileError words a key file error as "FLAG FILE: reason". The tokens
// loaders start their messages with the file; *fs.PathError is reworded.
func fileError(flag string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", flag, pe.Path, pe.Err)
	}
	return fmt.Errorf("%s %w", flag, err)
}

// optionalInt64 is an int64 flag that can be left unset (nil).
type optionalInt64 struct{ v *int64 }

func (f *optionalInt64) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f *optionalInt64) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want an integer")
	}
	f.v = &n
	return nil
}

func (f *optionalInt64) Type() string { return "int" }

// timeFlag is an RFC 3339 time; zero when unset.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	f.t = t
	return nil
}

func (f *timeFlag) Type() string { return "time" }

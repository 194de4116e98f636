package tokens

// The API server's service-account issuer discovery: the OIDC provider
// configuration and the key set it serves (pkg/serviceaccount/
// openidmetadata.go renders them, pkg/routes/openidmetadata.go serves them).

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	// OpenIDConfigPath serves the OIDC discovery document.
	OpenIDConfigPath = "/.well-known/openid-configuration"
	// JWKSPath serves the key set.
	JWKSPath = "/openid/v1/jwks"

	// oidcMaxAge is the Cache-Control max-age the API server sends with
	// static keys (staticPublicKeysGetter.GetCacheAgeMaxSeconds).
	oidcMaxAge = 3600
	// mimeJWKS is the key set's content type (RFC 7517 8.5.1); the
	// discovery document is application/json.
	mimeJWKS = "application/jwk-set+json"
	mimeJSON = "application/json"
)

// openIDMetadata is the discovery document, fields and order as the API
// server's openIDMetadata.
type openIDMetadata struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

type oidcHandler struct {
	issuer  string
	jwksURI string // "": derived from each request's Host
	algs    []string
	keyset  []byte
	config  []byte // pre-rendered when jwksURI is set
}

// NewOIDCHandler serves OpenIDConfigPath and JWKSPath for keys (public, or
// private whose public halves are published) as the API server does: the
// discovery document {issuer, jwks_uri, response_types_supported
// ["id_token"], subject_types_supported ["public"],
// id_token_signing_alg_values_supported (sorted)} as application/json, the
// JWKS as application/jwk-set+json, both with "Cache-Control: public,
// max-age=3600". Only GET (and HEAD) are answered.
//
// The issuer must be an http or https URL without query or fragment (the
// API server insists on https; a loopback test server needs http). An empty
// jwksURI is derived from each request: http(s)://<Host>/openid/v1/jwks, so
// the handler can be built before the address it listens on is known (the
// API server derives it from its external address).
func NewOIDCHandler(issuer string, jwksURI string, keys ...crypto.PublicKey) (http.Handler, error) {
	if issuer == "" {
		return nil, errors.New("empty issuer URL")
	}
	if err := checkDiscoveryURL("issuer", issuer); err != nil {
		return nil, err
	}
	if jwksURI != "" {
		if err := checkDiscoveryURL("jwks_uri", jwksURI); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys provided for validating keyset")
	}
	keyset, err := JWKS(keys...)
	if err != nil {
		return nil, err
	}
	h := &oidcHandler{issuer: issuer, jwksURI: jwksURI, keyset: keyset}
	for _, k := range keys {
		alg, err := Algorithm(k)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(h.algs, alg) {
			h.algs = append(h.algs, alg)
		}
	}
	slices.Sort(h.algs)
	if jwksURI != "" {
		if h.config, err = h.render(jwksURI); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func checkDiscoveryURL(what, s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%s URL: %w", what, err)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%s URL must use https (or http), got: %s", what, s)
	case u.Host == "":
		return fmt.Errorf("%s URL has no host: %s", what, s)
	case u.RawQuery != "":
		return fmt.Errorf("%s URL may not include a query, got: %s", what, s)
	case u.Fragment != "":
		return fmt.Errorf("%s URL may not include a fragment, got: %s", what, s)
	}
	return nil
}

func (h *oidcHandler) render(jwksURI string) ([]byte, error) {
	b, err := json.Marshal(openIDMetadata{
		Issuer:        h.issuer,
		JWKSURI:       jwksURI,
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
		SigningAlgs:   h.algs,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to marshal service account issuer metadata: %w", err)
	}
	return b, nil
}

func (h *oidcHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != OpenIDConfigPath && r.URL.Path != JWKSPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctype, body := mimeJWKS, h.keyset
	if r.URL.Path == OpenIDConfigPath {
		ctype, body = mimeJSON, h.config
		if body == nil {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			var err error
			if body, err = h.render((&url.URL{Scheme: scheme, Host: r.Host, Path: JWKSPath}).String()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", oidcMaxAge))
	w.Write(body) //nolint:errcheck // the client went away
}

// IsLoopbackHost reports whether host (a name or an IP literal, without a
// port) is "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckLoopbackAddr returns an error unless addr (host:port) listens on a
// loopback interface only; ":8080" and "0.0.0.0:8080" listen on all.
func CheckLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !IsLoopbackHost(host) {
		return fmt.Errorf("%q is not a loopback address", addr)
	}
	return nil
}

// ServeOIDC listens on addr (host:port; port 0 picks one) and serves h
// until ctx is done. It returns the base URL it listens on
// (http://127.0.0.1:PORT) and wait, which blocks until the server has
// stopped (ctx done and open requests finished, at most 5 s later) and
// returns why it stopped: nil after ctx, else the serving error. The
// address is not checked: see CheckLoopbackAddr.
func ServeOIDC(ctx context.Context, addr string, h http.Handler) (baseURL string, wait func() error, err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	shutDown := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(shutDown)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	})
	var (
		once   sync.Once
		result error
	)
	wait = func() error {
		once.Do(func() {
			err := <-served
			if stop() { // the server failed before ctx was done
				result = err
				return
			}
			<-shutDown
			if !errors.Is(err, http.ErrServerClosed) {
				result = err
			}
		})
		return result
	}
	return "http://" + ln.Addr().String(), wait, nil
}

package tokens

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet token manager's constants (pkg/kubelet/token/token_manager.go).
const (
	// MaxTTL: a cached token older than this (less jitter) is refreshed.
	MaxTTL = 24 * time.Hour
	// GCPeriod is how often expired tokens are dropped from the cache.
	GCPeriod = time.Minute
	// MaxJitter bounds the random head start given to each refresh check.
	MaxJitter = 10 * time.Second
)

// Manager is the kubelet's service-account token manager: a cache in front
// of a TokenGetter (normally an Issuer) that re-sends the same token until it
// is older than 24h or than 80% of its lifetime, less a jitter of whole
// seconds in [0, 10). It is safe for concurrent use.
type Manager struct {
	getter TokenGetter
	now    func() time.Time
	jitter func() time.Duration
	logf   func(format string, args ...any)

	mu    sync.RWMutex
	cache map[string]*authenticationv1.TokenRequest
}

var _ TokenGetter = (*Manager)(nil)

// ManagerOption configures a Manager.
type ManagerOption func(*Manager)

// WithClock sets the Manager's clock (default time.Now).
func WithClock(now func() time.Time) ManagerOption { return func(m *Manager) { m.now = now } }

// WithJitter sets the jitter source consulted on every refresh check
// (default: a random whole number of seconds in [0, 10), as the kubelet).
func WithJitter(jitter func() time.Duration) ManagerOption {
	return func(m *Manager) { m.jitter = jitter }
}

// WithLogf sets where "Couldn't update token" is logged when a refresh fails
// and the cached token is returned instead (default log.Printf; nil
// discards).
func WithLogf(logf func(format string, args ...any)) ManagerOption {
	return func(m *Manager) { m.logf = logf }
}

// NewManager returns a Manager that asks getter for tokens it does not have
// or that need a refresh. It starts no goroutine: call Run for the periodic
// garbage collection, or Cleanup.
func NewManager(getter TokenGetter, opts ...ManagerOption) *Manager {
	m := &Manager{
		getter: getter,
		now:    time.Now,
		jitter: defaultJitter,
		logf:   log.Printf,
		cache:  map[string]*authenticationv1.TokenRequest{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

func defaultJitter() time.Duration {
	return time.Duration(rand.Float64()*MaxJitter.Seconds()) * time.Second
}

// Token is GetServiceAccountToken: the cached token for this request if it
// does not need a refresh; otherwise a new one from the getter, cached. When
// the refresh fails the cached token is still returned until it expires.
// The result is a copy; neither it nor req is kept by reference.
func (m *Manager) Token(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if req == nil {
		req = &authenticationv1.TokenRequest{}
	}
	key := CacheKey(serviceAccount, namespace, req)

	ctr, ok := m.get(key)
	if ok && !m.requiresRefresh(ctr) {
		return ctr.DeepCopy(), nil
	}

	tr, err := m.getter.Token(ctx, namespace, serviceAccount, req.DeepCopy())
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case m.expired(ctr):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		default:
			if m.logf != nil {
				m.logf("Couldn't update token cacheKey=%s: %v", key, err)
			}
			return ctr.DeepCopy(), nil
		}
	}

	tr = tr.DeepCopy()
	m.mu.Lock()
	m.cache[key] = tr
	m.mu.Unlock()
	return tr.DeepCopy(), nil
}

// DeleteServiceAccountToken drops every cached token bound to the pod (the
// projected-volume plugin calls this when a pod goes; the CSI plugin never
// does).
func (m *Manager) DeleteServiceAccountToken(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == podUID {
			delete(m.cache, k)
		}
	}
}

// Cleanup drops expired tokens from the cache, as the kubelet does every
// GCPeriod.
func (m *Manager) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if m.expired(tr) {
			delete(m.cache, k)
		}
	}
}

// Run calls Cleanup every GCPeriod until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(GCPeriod)
	defer t.Stop()
	for {
		m.Cleanup()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Len returns the number of cached tokens.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.cache)
}

func (m *Manager) get(key string) (*authenticationv1.TokenRequest, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tr, ok := m.cache[key]
	return tr, ok
}

func (m *Manager) expired(tr *authenticationv1.TokenRequest) bool {
	return m.now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh: iat is taken as status.expirationTimestamp less the
// returned spec.expirationSeconds; refresh when now is past iat+24h-jitter
// or past exp-20%·expirationSeconds-jitter. A response without
// expirationSeconds is never refreshed (the kubelet logs an error).
func (m *Manager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		if m.logf != nil {
			m.logf("Expiration seconds was nil for token request %s/%s", tr.Namespace, tr.Name)
		}
		return false
	}
	now := m.now()
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)

	jitter := m.jitter()
	if now.After(iat.Add(MaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds*20/100)*time.Second - jitter))
}

// CacheKey is the kubelet's keyFunc: service account name, namespace,
// audiences, expirationSeconds (0 when nil), the whole boundObjectRef and
// the TokenRequest's UID, formatted as the kubelet formats them (%q/%q/%#v/
// %#v/%#v/%q), so a nil and an empty audience list are different keys.
func CacheKey(serviceAccount, namespace string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", serviceAccount, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}

package tokens_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// countingGetter is the API server as the manager sees it: counts calls and
// can be made to fail.
type countingGetter struct {
	mu    sync.Mutex
	next  tokens.TokenGetter
	calls int
	fail  error
	reqs  []*authenticationv1.TokenRequest
}

func (g *countingGetter) Token(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	g.mu.Lock()
	g.calls++
	g.reqs = append(g.reqs, req.DeepCopy())
	fail := g.fail
	g.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return g.next.Token(ctx, ns, sa, req)
}

func (g *countingGetter) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

type managerEnv struct {
	clock  *fakeClock
	getter *countingGetter
	mgr    *tokens.Manager
	jitter time.Duration
	logs   []string
}

func newManagerEnv(t *testing.T, mutate func(*tokens.IssuerConfig)) *managerEnv {
	rsaK, _ := keys(t)
	e := &managerEnv{clock: &fakeClock{now: t0}}
	cfg := baseConfig(rsaK, e.clock.Now)
	cfg.NewUID = nil // real jti: each issued token differs
	if mutate != nil {
		mutate(&cfg)
	}
	e.getter = &countingGetter{next: newIssuer(t, cfg)}
	e.mgr = tokens.NewManager(e.getter,
		tokens.WithClock(e.clock.Now),
		tokens.WithJitter(func() time.Duration { return e.jitter }),
		tokens.WithLogf(func(f string, a ...any) { e.logs = append(e.logs, fmt.Sprintf(f, a...)) }))
	return e
}

func (e *managerEnv) token(t *testing.T, req *authenticationv1.TokenRequest) string {
	t.Helper()
	out, err := e.mgr.Token(context.Background(), "default", "default", req)
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Token
}

// at sets the clock to t0 + d.
func (e *managerEnv) at(d time.Duration) {
	e.clock.mu.Lock()
	e.clock.now = t0.Add(d)
	e.clock.mu.Unlock()
}

func TestManagerReuseUntil80Percent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exp    *int64
		jitter time.Duration
		last   time.Duration // the last instant the cached token is reused
	}{
		// iat is t0 truncated to t0Unix; 3600 s: refresh once past exp-720 s.
		{"3600 no jitter", nil, 0, 2880*time.Second - 123456789},
		{"3600 jitter 9s", nil, 9 * time.Second, 2871*time.Second - 123456789},
		// 3607 (extended token): status says now+3607, 20% is 721 (integer).
		{"3607", new(int64(3607)), 0, 2886*time.Second - 123456789},
		// 7 days: the 24h rule comes first.
		{"7d", new(int64(7 * 24 * 3600)), 0, 24*time.Hour - 123456789},
		{"7d jitter 5s", new(int64(7 * 24 * 3600)), 5 * time.Second, 24*time.Hour - 5*time.Second - 123456789},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManagerEnv(t, nil)
			e.jitter = tc.jitter
			req := podRequest("", tc.exp)
			first := e.token(t, req)
			e.at(tc.last / 2)
			if e.token(t, req) != first {
				t.Fatal("new token at half the threshold")
			}
			e.at(tc.last)
			if e.token(t, req) != first {
				t.Fatalf("new token at the threshold %v", tc.last)
			}
			if e.getter.Calls() != 1 {
				t.Fatalf("%d API calls, want 1", e.getter.Calls())
			}
			e.at(tc.last + time.Nanosecond)
			second := e.token(t, req)
			if second == first || e.getter.Calls() != 2 {
				t.Fatalf("no refresh just after the threshold (calls %d)", e.getter.Calls())
			}
			if e.token(t, req) != second || e.getter.Calls() != 2 {
				t.Fatal("the refreshed token is not cached")
			}
		})
	}
}

func TestManagerUsesServerExpirationSeconds(t *testing.T) {
	// Asked for 3 h, shortened to 2 h by the server: the 80% rule applies
	// to the returned 7200 s (refresh past t0Unix+5760).
	e := newManagerEnv(t, func(c *tokens.IssuerConfig) { c.MaxExpiration = 2 * time.Hour })
	req := podRequest("vault", new(int64(3*3600)))
	first := e.token(t, req)
	e.at(5760*time.Second - 123456789)
	if e.token(t, req) != first {
		t.Fatal("refreshed before 80% of the returned lifetime")
	}
	e.at(5760*time.Second - 123456788)
	if e.token(t, req) == first {
		t.Fatal("not refreshed after 80% of the returned lifetime")
	}
}

func TestManagerCacheKey(t *testing.T) {
	e := newManagerEnv(t, nil)
	base := podRequest("", nil)
	a := e.token(t, base)
	variants := map[string]*authenticationv1.TokenRequest{}
	v := base.DeepCopy()
	v.Spec.Audiences = nil // nil and [] are different keys (%#v)
	variants["nil audiences"] = v
	v = base.DeepCopy()
	v.Spec.Audiences = []string{"vault"}
	variants["audience"] = v
	v = base.DeepCopy()
	v.Spec.ExpirationSeconds = new(int64(3600)) // 3600 vs nil (0 in the key)
	variants["explicit 3600"] = v
	v = base.DeepCopy()
	v.Spec.BoundObjectRef.UID = "another-pod-uid"
	variants["pod uid"] = v
	v = base.DeepCopy()
	v.UID = saUID
	variants["request UID"] = v
	calls := 1
	for name, req := range variants {
		if got := e.token(t, req); got == a {
			t.Errorf("%s: shares the cached token", name)
		}
		calls++
	}
	if e.getter.Calls() != calls || e.mgr.Len() != calls {
		t.Errorf("calls %d, cache %d, want %d", e.getter.Calls(), e.mgr.Len(), calls)
	}
	if e.token(t, base.DeepCopy()) != a {
		t.Error("an equal request missed the cache")
	}

	key := tokens.CacheKey("default", "default", base)
	want := `"default"/"default"/[]string{}/0/v1.BoundObjectReference{Kind:"Pod", APIVersion:"v1", Name:"web-0", UID:"c0ffee00-1111-4222-8333-444455556666"}/""`
	if key != want {
		t.Errorf("key\n got %s\nwant %s", key, want)
	}
	if got := tokens.CacheKey("sa", "ns", &authenticationv1.TokenRequest{}); got != `"sa"/"ns"/[]string(nil)/0/v1.BoundObjectReference{Kind:"", APIVersion:"", Name:"", UID:""}/""` {
		t.Errorf("empty key %s", got)
	}
	// The getter saw the request as the kubelet built it.
	if r := e.getter.reqs[0]; r.Spec.Audiences == nil || len(r.Spec.Audiences) != 0 || r.Spec.ExpirationSeconds != nil {
		t.Errorf("request passed on %+v", r.Spec)
	}
}

func TestManagerFailedRefresh(t *testing.T) {
	e := newManagerEnv(t, nil)
	req := podRequest("", nil)
	boom := errors.New("boom")

	// Nothing cached.
	e.getter.fail = boom
	_, err := e.mgr.Token(context.Background(), "default", "default", req)
	if err == nil || err.Error() != "failed to fetch token: boom" || !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}

	e.getter.fail = nil
	first := e.token(t, req)
	e.getter.fail = boom
	// Due for refresh, refresh fails, old token still valid: returned.
	e.at(3000 * time.Second)
	if got := e.token(t, req); got != first {
		t.Error("old token not returned")
	}
	if len(e.logs) != 1 || !strings.HasPrefix(e.logs[0], "Couldn't update token cacheKey=") {
		t.Errorf("logs %q", e.logs)
	}
	// At exactly exp the token is not yet expired (now.After(exp) is false).
	e.at(3600*time.Second - 123456789)
	if got := e.token(t, req); got != first {
		t.Error("old token not returned at exp")
	}
	// Past exp: error naming the key.
	e.at(3600 * time.Second)
	_, err = e.mgr.Token(context.Background(), "default", "default", req)
	want := "token " + tokens.CacheKey("default", "default", req) + " expired and refresh failed: boom"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	// Recovery.
	e.getter.fail = nil
	if got := e.token(t, req); got == first {
		t.Error("no new token after recovery")
	}
}

func TestManagerCleanupAndDelete(t *testing.T) {
	e := newManagerEnv(t, nil)
	e.token(t, podRequest("", nil))                   // expires t0+3600
	e.token(t, podRequest("vault", new(int64(7200)))) // expires t0+7200
	other := podRequest("", nil)
	other.Spec.BoundObjectRef.UID = "pod-2"
	other.Spec.BoundObjectRef.Name = "web-1"
	e.token(t, other)
	if e.mgr.Len() != 3 {
		t.Fatalf("cache %d", e.mgr.Len())
	}
	e.at(3601 * time.Second)
	e.mgr.Cleanup()
	if e.mgr.Len() != 1 {
		t.Fatalf("after cleanup %d, want 1", e.mgr.Len())
	}
	e.mgr.DeleteServiceAccountToken(types.UID(podUID))
	if e.mgr.Len() != 0 {
		t.Fatalf("after delete %d", e.mgr.Len())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.mgr.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
}

func TestManagerDefaultJitterAndCopies(t *testing.T) {
	rsaK, _ := keys(t)
	clock := &fakeClock{now: t0}
	cfg := baseConfig(rsaK, clock.Now)
	cfg.NewUID = nil
	m := tokens.NewManager(newIssuer(t, cfg), tokens.WithClock(clock.Now), tokens.WithLogf(nil))
	req := podRequest("", nil)
	out, err := m.Token(context.Background(), "default", "default", req)
	if err != nil {
		t.Fatal(err)
	}
	first := out.Status.Token
	out.Status.Token = "mutated"
	// With the random jitter in [0,10) s: reused up to 2870 s, refreshed
	// after 2880 s.
	clock.Step(2870 * time.Second)
	out, _ = m.Token(context.Background(), "default", "default", req)
	if out.Status.Token != first {
		t.Errorf("cached token was %q; callers get copies", out.Status.Token)
	}
	clock.Step(11 * time.Second)
	out, _ = m.Token(context.Background(), "default", "default", req)
	if out.Status.Token == first {
		t.Error("not refreshed after 80% + 10 s")
	}
}

func TestManagerConcurrent(t *testing.T) {
	e := newManagerEnv(t, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				req := podRequest(fmt.Sprintf("aud-%d", (i+j)%4), nil)
				if _, err := e.mgr.Token(context.Background(), "default", "default", req); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if e.mgr.Len() != 4 {
		t.Errorf("cache %d, want 4", e.mgr.Len())
	}
}

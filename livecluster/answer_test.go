package livecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A 302 to another host (plain HTTP) is the cluster's answer, not
// followed: the redirect target never gets a request, so never the
// kubeconfig's token.
func TestReadRedirectNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"}}`))
	}))
	defer other.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, t.TempDir(), srv.URL, "    token: s3cr3t-token\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), cfg, "shop", "web", "")
	mu.Lock()
	for _, req := range elsewhere {
		if strings.Contains(req, "s3cr3t-token") {
			t.Errorf("the redirect target got the kubeconfig's token: %s", req)
		}
	}
	if len(elsewhere) != 0 {
		t.Errorf("the redirect was followed: %q", elsewhere)
	}
	mu.Unlock()
	var re *RedirectError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want a RedirectError", err, err)
	}
	for _, want := range []string{"the API server at " + srv.URL + " answered 302 Found to " + other.URL + "/api/v1/namespaces/shop/pods/web", "not followed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cr3t-token") {
		t.Errorf("the token is in the error: %v", err)
	}
}

// A truncated answer and one that is not JSON: said as what they are,
// not as a cluster that cannot be reached.
func TestReadInvalidAnswer(t *testing.T) {
	for name, body := range map[string]string{
		"truncated": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","names`,
		"html":      `<html>proxy error</html>`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, t.TempDir(), srv.URL, "    token: t\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Read(context.Background(), cfg, "shop", "web", "")
			var ae *AnswerError
			var un *UnreachableError
			if !errors.As(err, &ae) || errors.As(err, &un) {
				t.Fatalf("err = %v (%T), want an AnswerError", err, err)
			}
			if !strings.Contains(err.Error(), "the server's answer was not a valid object") || strings.Contains(err.Error(), "cannot be reached") {
				t.Errorf("err = %v", err)
			}
		})
	}
	// Cut mid-body: the length said, fewer bytes sent.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(`{"apiVersion":"v1"`))
	}))
	defer srv.Close()
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, t.TempDir(), srv.URL, "    token: t\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), cfg, "shop", "web", "")
	var ae *AnswerError
	if !errors.As(err, &ae) {
		t.Errorf("cut body: err = %v (%T), want an AnswerError", err, err)
	}
}

// fakeCluster serves a pod with n claims, each bound to a CSI PV, and
// counts the GETs in flight.
type fakeCluster struct {
	n                   int
	inFlight, maxFlight atomic.Int64
	gets                atomic.Int64
	hang                chan struct{} // when set, every GET after the pod waits on it
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.gets.Add(1)
	cur := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxFlight.Load()
		if cur <= m || f.maxFlight.CompareAndSwap(m, cur) {
			break
		}
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	name := parts[len(parts)-1]
	resource := parts[len(parts)-2]
	var obj any
	switch resource {
	case "pods":
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "u"}, Spec: corev1.PodSpec{NodeName: "n1"}}
		for i := 0; i < f.n; i++ {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i), VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("c%d", i)}}})
		}
		obj = pod
	case "persistentvolumeclaims":
		if f.hang != nil {
			<-f.hang
		}
		// A claim's answer takes a moment, as over a network: GETs sent
		// at once overlap here however loaded the machine is.
		time.Sleep(time.Millisecond)
		obj = &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}}
	case "persistentvolumes":
		obj = &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d.example.com", VolumeHandle: "h-" + name}}}}
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"not found","reason":"NotFound","code":404}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

// A pod of 10,000 volumes: every claim, PV and VolumeAttachment read,
// several at a time (bounded), in the pod's order.
func TestReadManyVolumes(t *testing.T) {
	const n = 10000
	f := &fakeCluster{n: n}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, t.TempDir(), srv.URL, "    token: t\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), cfg, "shop", "web", "")
	if err != nil {
		t.Fatal(err)
	}
	claims, pvs := 0, 0
	for _, o := range got.Objects {
		switch x := o.(type) {
		case *corev1.PersistentVolumeClaim:
			if x.Name != fmt.Sprintf("c%d", claims) {
				t.Fatalf("claim %d is %s: not in the pod's order", claims, x.Name)
			}
			claims++
		case *corev1.PersistentVolume:
			pvs++
		}
	}
	if claims != n || pvs != n {
		t.Errorf("read %d claims and %d PVs, want %d each", claims, pvs, n)
	}
	// The pod, its ServiceAccount, its Node, the CSIDriver, and per volume
	// a claim, a PV and a VolumeAttachment: each once.
	if g := f.gets.Load(); g != 3*n+4 {
		t.Errorf("%d GETs, want %d", g, 3*n+4)
	}
	if m := f.maxFlight.Load(); m < 2 || m > fetchWorkers {
		t.Errorf("at most %d GETs in flight, want between 2 and %d", m, fetchWorkers)
	}
	t.Logf("%d GETs, at most %d in flight", f.gets.Load(), f.maxFlight.Load())
}

// A cluster that stops answering: the whole read ends at its deadline,
// said as such.
func TestReadDeadline(t *testing.T) {
	f := &fakeCluster{n: 50, hang: make(chan struct{})}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	defer close(f.hang)
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, t.TempDir(), srv.URL, "    token: t\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Deadline = 300 * time.Millisecond
	_, err = Read(context.Background(), cfg, "shop", "web", "")
	var de *DeadlineError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "took longer than the deadline of 300ms for the whole read") {
		t.Fatalf("err = %v (%T), want a DeadlineError", err, err)
	}
}

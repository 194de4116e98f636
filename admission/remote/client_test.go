package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Without a helper, the error says what is missing and how to get it.
func TestHelperNotFound(t *testing.T) {
	t.Setenv(HelperEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err := Open(io.Discard, 0)
	var nf *HelperNotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "make install") || !strings.Contains(err.Error(), HelperEnv) {
		t.Fatalf("Open without a helper: %v", err)
	}
}

// A helper that does not answer (a webhook that hangs) does not hang the
// simulator: the call ends with its context, and the helper is killed.
func TestCallEndsWithContext(t *testing.T) {
	script := filepath.Join(t.TempDir(), HelperName)
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(HelperEnv, script)
	h, err := Open(io.Discard, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err = h.AdmitCreate(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AdmitCreate on a silent helper: %v, want the context's deadline", err)
	}
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: the helper was not killed")
	}
	// No bound on the time taken: the deadline's error above and Close's
	// return say the helper was given up and killed; load only slows them.
	// Later calls fail at once rather than talk to a dead helper.
	if _, err := h.Validate(context.Background(), nil); err == nil {
		t.Error("a call after the helper was killed succeeded")
	}
}

// Objects cross the process boundary as they are, for every kind.
func TestObjectRoundTrip(t *testing.T) {
	for _, k := range Kinds {
		obj := k.Object.DeepCopyObject()
		o, err := EncodeObject(obj)
		if err != nil {
			t.Fatalf("%s: %v", k.GVK.Kind, err)
		}
		back, err := DecodeObject(o)
		if err != nil || KindOf(back) != k.GVK.Kind {
			t.Errorf("%s: back as %T, %v", k.GVK.Kind, back, err)
		}
	}
	if _, err := DecodeObject(&Object{Kind: "Deployment", Raw: []byte("{}")}); err == nil {
		t.Error("decoded an unsupported kind")
	}
}

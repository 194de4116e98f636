package kubeletdiff

import (
	"bytes"
	"flag"
	"io"
	"os"
	"sync"
	"testing"

	"k8s.io/klog/v2"
)

// klogBuffer keeps what the kubelet code logs during one case; the case
// prints it when it fails (KUBELETDIFF_V=N raises the verbosity).
var klogBuffer syncBuffer

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was logged since the last call.
func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

func TestMain(m *testing.M) {
	fs := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(fs)
	v := os.Getenv("KUBELETDIFF_V")
	if v == "" {
		v = "2"
	}
	_ = fs.Set("v", v)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	// Without logtostderr klog writes a message to the output of its
	// severity and of every lower one: only INFO's keeps it, once.
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("INFO", &klogBuffer)
	os.Exit(m.Run())
}

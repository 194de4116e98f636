package sidecars

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO named like a record: reading it neither blocks (nobody writes to
// it) nor takes it as a record; it stays.
func TestRecordFIFORefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), recordDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sidecars-1"+recordSuffix)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readRecord(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("readRecord = %v, want the FIFO refused", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("readRecord of a FIFO hangs")
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v", err)
	}
}

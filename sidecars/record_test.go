package sidecars

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A record line is as long as the CreateVolume request it holds: one of
// several megabytes (the input may be 8 MiB) must be read whole, and a
// torn last line (killed mid-write) ignored.
func TestRecordLongLineAndTornTail(t *testing.T) {
	long := strings.Repeat("p", 5<<20)
	req, err := json.Marshal(map[string]any{"name": "pvc-1", "parameters": map[string]string{"k": long}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range []entry{
		{Kind: kindCreating, Name: "pvc-1", Request: req, Time: time.Now()},
		{Kind: kindCreated, Name: "pvc-1", Handle: "vol-1", Time: time.Now()},
	} {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString(`{"k":"deleted","name":"pvc-1"`) // torn: no end, no newline
	p := filepath.Join(t.TempDir(), "r"+recordSuffix)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(p)
	if err != nil {
		t.Fatalf("readRecord: %v", err)
	}
	if len(got.volumes) != 1 || got.volumes[0].handle != "vol-1" || len(got.volumes[0].request) != len(req) {
		t.Fatalf("volumes = %d (want 1, handle vol-1, the whole request)", len(got.volumes))
	}
}

// The record dir replaced by a symlink is refused, not written through.
func TestRecordDirSymlinkRefused(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, recordDir)); err != nil {
		t.Fatal(err)
	}
	c := &Controllers{cfg: Config{RootDir: root}}
	if _, err := c.openRecord(); err == nil {
		t.Fatal("openRecord through a symlinked record dir: no error")
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Fatalf("%d files written outside the root", len(es))
	}
}

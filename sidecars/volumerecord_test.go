package sidecars

import (
	"errors"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestVolumeRecord: a volume created and not deleted is what the record
// leaves for Cleanup, which a deleted or refused one is not; Close keeps
// the record only while one is left.
func TestVolumeRecord(t *testing.T) {
	root := t.TempDir()
	v := NewVolumeRecord(root, "conformance")
	for _, n := range []string{"a", "b", "c", "d"} {
		if err := v.Creating(&csi.CreateVolumeRequest{Name: n, Secrets: map[string]string{"k": "secret"}}); err != nil {
			t.Fatal(err)
		}
	}
	must(t, v.Created("a", "ha"))
	must(t, v.Created("b", "hb"))
	must(t, v.Deleted("b", "hb"))
	must(t, v.Failed("c", errors.New("refused")))
	// d: a timeout may have made it; its request stays.
	must(t, v.Failed("d", status.Error(codes.DeadlineExceeded, "slow")))
	if !v.Close() {
		t.Fatal("Close removed a record that lists volumes")
	}
	rs, _ := Records(root)
	if len(rs) != 1 {
		t.Fatalf("records %v, want 1", rs)
	}
	p, err := readRecord(rs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.volumes) != 2 || p.volumes[0].handle != "ha" || p.volumes[1].name != "d" || p.volumes[1].handle != "" {
		t.Fatalf("pending %+v, want a (handle ha) and d (no handle)", p.volumes)
	}
	if string(p.volumes[1].request) == "" || strings.Contains(string(p.volumes[1].request), "secret") {
		t.Errorf("d's request %s: want it, without secrets", p.volumes[1].request)
	}

	w := NewVolumeRecord(root, "conformance")
	must(t, w.Creating(&csi.CreateVolumeRequest{Name: "e"}))
	must(t, w.Created("e", "he"))
	must(t, w.Deleted("e", "he"))
	if w.Close() {
		t.Error("Close kept a record whose volumes were all deleted")
	}
	if rs, _ := Records(root); len(rs) != 1 {
		t.Errorf("records %v, want only the first", rs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

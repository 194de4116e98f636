package rootdir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A journal line of up to 1 MiB is read back whole: a 1000 KiB volume
// handle (a longer one is refused before anything of its volume is made,
// TestJournalRecordBound); a torn last line is dropped.
func TestJournalLongLine(t *testing.T) {
	handle := strings.Repeat("h", 1000*1024)
	var b bytes.Buffer
	for _, r := range []JournalRecord{{Kind: RecordRun, PID: 1}, {Kind: RecordVolData, Path: "/r/x", Data: map[string]string{"volumeHandle": handle}}, {Kind: RecordDir, Path: "/r/y"}} {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	b.WriteString(`{"k":"dir","p":"/r/torn`) // killed mid-write
	jc, err := ParseJournal(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := jc.VolData["/r/x"]["volumeHandle"]; got != handle {
		t.Errorf("handle read back with %d bytes, want %d", len(got), len(handle))
	}
	if jc.Owned["/r/y"] != RecordDir || len(jc.Owned) != 1 {
		t.Errorf("owned = %v", jc.Owned)
	}
}

// A driver call announced and never answered is in flight; answered, it
// is not.
func TestJournalInFlight(t *testing.T) {
	in := `{"k":"call","op":"NodeStageVolume","p":"/r/a"}
{"k":"called","op":"NodeStageVolume","p":"/r/a"}
{"k":"call","op":"NodePublishVolume","p":"/r/b"}
`
	jc, err := ParseJournal(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(jc.InFlight) != 1 || jc.InFlight["/r/b"] != "NodePublishVolume" {
		t.Errorf("inFlight = %v", jc.InFlight)
	}
}

// Forged records, naming paths inside the root dir the simulator would not
// have made for the journal's volumes, are refused: a foreign bind mount,
// a foreign file, another pod's vol_data.json; the genuine ones are taken.
func TestAdoptRefusesForgedRecords(t *testing.T) {
	root := t.TempDir()
	p := Paths{Root: root}
	const drv, handle = "d.example.com", "vol-1"
	ours := p.PodVolumeDir("uid-1", "pv-a")
	staging := p.DeviceMountPath(drv, handle)
	foreignPod := p.PodVolumeDir("uid-9", "pv-z")
	jc := &JournalContents{
		Owned: map[string]string{
			p.PodDir("uid-1"): RecordDir, ours: RecordDir, ours + "/vol_data.json": recordFile,
			filepath.Join(root, "etc-precious"):       recordFile, // not the kubelet's layout
			filepath.Join(root, "pods", "uid-1", "x"): RecordDir,
			foreignPod + "/vol_data.json":             recordFile, // no voldata record of this journal
		},
		MountPaths: map[string]bool{
			ours + "/mount": true, staging: true,
			filepath.Join(root, "foreign-bind"): true,
			foreignPod + "/mount":               true,
			p.DeviceMountPath(drv, "other"):     true,
		},
		VolData: map[string]map[string]string{
			ours:                  {"specVolID": "pv-a", "driverName": drv, "volumeHandle": handle},
			filepath.Dir(staging): {"driverName": drv, "volumeHandle": handle},
			// claims to be pv-b, sits in pv-z's dir
			foreignPod: {"specVolID": "pv-b", "driverName": drv, "volumeHandle": "x"},
		},
	}
	for q := range jc.Owned {
		jc.order = append(jc.order, q)
	}
	refused := map[string]bool{}
	f := NewFileSystem(root)
	f.Adopt(jc, func(_, q string, _ error) { refused[q] = true })
	for _, q := range []string{ours, p.PodDir("uid-1"), ours + "/vol_data.json"} {
		if !f.IsOwned(q) {
			t.Errorf("genuine %s not adopted", q)
		}
	}
	for _, q := range []string{ours + "/mount", staging} {
		if !f.IsMountPath(q) {
			t.Errorf("genuine mount path %s not adopted", q)
		}
	}
	for _, q := range []string{filepath.Join(root, "etc-precious"), filepath.Join(root, "pods", "uid-1", "x"), foreignPod + "/vol_data.json"} {
		if f.IsOwned(q) || !refused[q] {
			t.Errorf("forged %s adopted (refused: %v)", q, refused[q])
		}
	}
	for _, q := range []string{filepath.Join(root, "foreign-bind"), foreignPod + "/mount", p.DeviceMountPath(drv, "other")} {
		if f.IsMountPath(q) || !refused[q] {
			t.Errorf("forged mount path %s adopted (refused: %v)", q, refused[q])
		}
	}
	if dirs, _ := f.JournaledVolumeData(); len(dirs) != 2 {
		t.Errorf("vol_data.json copies kept: %v, want ours and the staging one", dirs)
	}
}

// Intent first: a directory is journaled before it is made, so no kill
// can leave one made and not journaled.
func TestMkdirJournalsFirst(t *testing.T) {
	root := t.TempDir()
	f := NewFileSystem(root)
	d := filepath.Join(root, "pods", "u1")
	must(t, f.MkdirAll(d, 0o750))
	jc, err := ReadJournal(f.Journal.Path)
	if err != nil {
		t.Fatal(err)
	}
	if jc.Owned[d] != RecordDir || jc.Owned[filepath.Dir(d)] != RecordDir {
		t.Errorf("journal owns %v", jc.Owned)
	}
	// A symlink planted on the way is refused, naming it.
	elsewhere := t.TempDir()
	must(t, os.Symlink(elsewhere, filepath.Join(root, "plugins")))
	err = f.MkdirAll(filepath.Join(root, "plugins", "kubernetes.io", "csi"), 0o750)
	if !IsSymlinkRefused(err) || !strings.Contains(err.Error(), filepath.Join(root, "plugins")) {
		t.Errorf("mkdir through a symlink: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("made %v through the symlink", entries)
	}
}

// FuzzJournal: any bytes as a journal are read without a panic, and what
// `cleanup` takes from them lies strictly inside the root dir, each path
// one the kubelet's layout has.
func FuzzJournal(f *testing.F) {
	root := fuzzRoot
	p := Paths{Root: root}
	vol := p.PodVolumeDir("u1", "pv-a")
	f.Add([]byte(`{"k":"run","pid":1,"cmd":"run"}
{"k":"dir","p":"` + p.PodDir("u1") + `"}
{"k":"voldata","p":"` + vol + `","data":{"specVolID":"pv-a","driverName":"d.example.com","volumeHandle":"h"}}
{"k":"file","p":"` + vol + `/vol_data.json"}
{"k":"mount","p":"` + vol + `/mount"}
{"k":"call","op":"NodePublishVolume","p":"` + vol + `/mount"}
`))
	f.Add([]byte(`{"k":"mount","p":"/var/lib/kubelet/../../etc"}` + "\n" + `{"k":"file","p":"/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/y/vol_data.json"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		jc, err := ParseJournal(bytes.NewReader(data))
		if err != nil {
			// only a line over the bound; one line of text
			if !strings.Contains(err.Error(), "longer than 1 MiB") || strings.Contains(err.Error(), "\n") {
				t.Fatal(err)
			}
			return
		}
		fs := NewFileSystem(root)
		fs.Adopt(jc, func(string, string, error) {})
		n := fs.names(jc, func(string, string, error) {})
		for _, q := range fs.Created() {
			if q == root {
				continue // the root dir the run made: removed only when empty
			}
			if !fs.insideRoot(q) {
				t.Errorf("adopted %q outside %s", q, root)
			}
			if fs.derivedDir(q) != nil && fs.derivedFile(q, jc, n) != nil {
				t.Errorf("adopted %q, not of the kubelet's layout", q)
			}
		}
		for q := range fs.mountPaths {
			if !fs.insideRoot(q) || len(fs.rel(q)) < 6 {
				t.Errorf("adopted mount path %q", q)
			}
		}
	})
}

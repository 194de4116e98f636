package rootdir

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docs/kubelet.md §1.6: one JSON object, keys sorted, then a newline.
func TestSaveAndLoadVolumeData(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "v")
	must(t, os.Mkdir(dir, 0o750))
	f := NewFileSystem(root)
	data := map[string]string{"volumeHandle": "vol-1", "driverName": "d", "specVolID": "pv-1"}
	if err := f.SaveVolumeData(dir, data); err != nil {
		t.Fatal(err)
	}
	const want = `{"driverName":"d","specVolID":"pv-1","volumeHandle":"vol-1"}` + "\n"
	if got := readFile(dir + "/vol_data.json"); got != want {
		t.Errorf("vol_data.json = %q, want %q", got, want)
	}
	got, err := f.LoadVolumeData(dir)
	if err != nil || !maps.Equal(got, data) {
		t.Errorf("loadVolumeData = %v, %v", got, err)
	}
	if !slices.Equal(f.Created(), []string{dir + "/vol_data.json"}) {
		t.Errorf("Created = %q", f.Created())
	}
	// Rewriting an existing file is not a new creation.
	if err := f.SaveVolumeData(dir, data); err != nil || len(f.Created()) != 1 {
		t.Errorf("second save: %v, created %q", err, f.Created())
	}
}

func TestLoadVolumeDataErrors(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "v")
	must(t, os.Mkdir(dir, 0o750))
	f := NewFileSystem(root)
	if _, err := f.LoadVolumeData(dir); !os.IsNotExist(err) {
		t.Errorf("missing file: %v, want not-exist", err)
	}
	if err := os.WriteFile(dir+"/vol_data.json", []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.LoadVolumeData(dir)
	if err == nil || !strings.HasPrefix(err.Error(), "kubernetes.io/csi: failed to parse volume data file "+dir+"/vol_data.json: ") {
		t.Errorf("bad file: %v", err)
	}
}

// docs/kubelet.md §1.7: removeMountDir removes the (empty, unmounted) dir, the
// vol_data.json beside it, and their parent; a non-empty dir stops it.
func TestRemoveMountDir(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(vol string)
		wantErr     string // prefix
		wantRemoved []string
		wantKept    []string
	}{
		{
			name: "empty mount dir",
			setup: func(vol string) {
				must(t, os.MkdirAll(vol+"/mount", 0o750))
				must(t, os.WriteFile(vol+"/vol_data.json", []byte("{}\n"), 0o600))
			},
			wantRemoved: []string{"mount", "vol_data.json", ""},
		},
		{
			name: "mount dir already gone",
			setup: func(vol string) {
				must(t, os.MkdirAll(vol, 0o750))
				must(t, os.WriteFile(vol+"/vol_data.json", []byte("{}\n"), 0o600))
			},
			wantRemoved: []string{"vol_data.json", ""},
		},
		{
			name: "mount dir not empty",
			setup: func(vol string) {
				must(t, os.MkdirAll(vol+"/mount", 0o750))
				must(t, os.WriteFile(vol+"/mount/file", nil, 0o600))
				must(t, os.WriteFile(vol+"/vol_data.json", []byte("{}\n"), 0o600))
			},
			wantErr:  "kubernetes.io/csi: failed to remove dir [",
			wantKept: []string{"mount/file", "vol_data.json"},
		},
		{
			name: "parent holds something else",
			setup: func(vol string) {
				must(t, os.MkdirAll(vol+"/mount", 0o750))
				must(t, os.WriteFile(vol+"/other", nil, 0o600))
			},
			wantErr:     "kubernetes.io/csi: failed to delete volume path [",
			wantRemoved: []string{"mount"},
			wantKept:    []string{"other"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			vol := filepath.Join(root, "pv-1")
			tc.setup(vol)
			removed, err := NewFileSystem(root).RemoveMountDir(vol + "/mount")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want prefix %q", err, tc.wantErr)
			}
			var want []string
			for _, r := range tc.wantRemoved {
				want = append(want, strings.TrimSuffix(vol+"/"+r, "/"))
			}
			if !slices.Equal(removed, want) {
				t.Errorf("removed = %q, want %q", removed, want)
			}
			for _, k := range tc.wantKept {
				if !exists(vol + "/" + k) {
					t.Errorf("%s removed", k)
				}
			}
		})
	}
}

func TestMkdirAllRemembers(t *testing.T) {
	root := t.TempDir()
	f := NewFileSystem(root)
	if err := f.MkdirAll(root+"/a/b/c", 0o750); err != nil {
		t.Fatal(err)
	}
	want := []string{root + "/a", root + "/a/b", root + "/a/b/c"}
	if !slices.Equal(f.Created(), want) {
		t.Errorf("Created = %q, want %q", f.Created(), want)
	}
	if err := f.MkdirAllWithPathCheck(root+"/a/b", 0o750); err != nil || len(f.Created()) != 3 {
		t.Errorf("existing dir: %v, created %q", err, f.Created())
	}
	must(t, os.WriteFile(root+"/file", nil, 0o600))
	err := f.MkdirAllWithPathCheck(root+"/file", 0o750)
	if want := "path " + root + "/file exists but is not a directory"; err == nil || err.Error() != want {
		t.Errorf("file in the way: %v, want %q", err, want)
	}
}

package rootdir

// journalcheck.go: what pkg/kubelet/volumemanager/reconciler/reconstruct.go
// trusts of the root dir, the simulator checks of its journal.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// A journal is a file anyone with access to the root dir could edit. Its
// records are not trusted as they are: each path must be one the
// simulator would have made, its names re-derived and checked. A mount
// path or a vol_data.json (what leads `cleanup` to unmount, or to call the
// driver's unpublish) must follow from a vol_data.json record of the same
// journal: the pod UID and volume name of a pod volume, the driver and
// the SHA-256 of the handle of a staged volume, the volume name of a
// block volume. Directories, which are only ever removed when empty, must
// have the shape of the kubelet's layout with valid names.

var sha256HexName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// journalNames are the names a journal's vol_data.json records give.
type journalNames struct {
	podVolumes map[string]bool // PodVolumeDir
	devices    map[string]bool // dir of a DeviceMountPath
	blocks     map[string]bool // block volume spec names
}

// derivedVolData checks a vol_data.json record: its dir must be the one
// the kubelet derives from the data itself.
func (f *FileSystem) derivedVolData(dir string, data map[string]string) error {
	p := Paths{Root: filepath.Clean(f.root)}
	if err := manifests.ValidateDriverName(data["driverName"], field.NewPath("driverName")); err != nil {
		return err
	}
	c := f.rel(dir)
	switch {
	case len(c) == 5 && c[0] == "pods":
		if err := validPodUID(c[1]); err != nil {
			return err
		}
		if err := manifests.ValidateSpecName(data["specVolID"], field.NewPath("specVolID")); err != nil {
			return err
		}
		if dir == p.PodVolumeDir(c[1], data["specVolID"]) {
			return nil
		}
	case len(c) == 5 && c[0] == "plugins" && c[3] != "volumeDevices":
		if dir == filepath.Dir(p.DeviceMountPath(data["driverName"], data["volumeHandle"])) {
			return nil
		}
	case len(c) == 6 && c[0] == "plugins":
		if err := manifests.ValidateSpecName(c[4], field.NewPath("spec")); err == nil && dir == p.BlockDataDir(c[4]) {
			return nil
		}
	}
	return fmt.Errorf("not where the kubelet keeps the vol_data.json of driver %q, volume %q, handle of %d bytes", data["driverName"], data["specVolID"], len(data["volumeHandle"]))
}

// names collects the names of a journal's accepted vol_data.json records.
func (f *FileSystem) names(jc *JournalContents, refuse func(kind, p string, err error)) journalNames {
	n := journalNames{podVolumes: map[string]bool{}, devices: map[string]bool{}, blocks: map[string]bool{}}
	for dir, data := range jc.VolData {
		if data == nil {
			continue
		}
		if err := f.derivedVolData(dir, data); err != nil {
			refuse(RecordVolData, dir, err)
			delete(jc.VolData, dir)
			continue
		}
		switch c := f.rel(dir); {
		case c[0] == "pods":
			n.podVolumes[dir] = true
		case c[3] == "volumeDevices":
			n.blocks[c[4]] = true
		default:
			n.devices[dir] = true
		}
	}
	return n
}

// rel is p's components below the root dir.
func (f *FileSystem) rel(p string) []string {
	return strings.Split(strings.TrimPrefix(p, filepath.Clean(f.root)+"/"), "/")
}

func validPodUID(uid string) error {
	if uid == "" {
		return fmt.Errorf("empty pod UID")
	}
	return manifests.ValidatePodUID(uid, field.NewPath("pod uid"))
}

// derivedMount checks a mount record: a publish target, a staging path or
// a block path of a volume the journal's vol_data.json records name.
func (f *FileSystem) derivedMount(p string, n journalNames) error {
	c := f.rel(p)
	switch {
	case len(c) == 6 && c[0] == "pods" && c[5] == "mount" && n.podVolumes[filepath.Dir(p)]:
		return nil
	case len(c) == 6 && c[0] == "plugins" && c[5] == globalMountDir && n.devices[filepath.Dir(p)]:
		return nil
	case len(c) == 6 && c[3] == "volumeDevices" && c[4] == "staging" && n.blocks[c[5]]:
		return nil
	case len(c) == 7 && c[3] == "volumeDevices" && c[4] == "publish" && n.blocks[c[5]] && validPodUID(c[6]) == nil:
		return nil
	case len(c) == 7 && c[3] == "volumeDevices" && c[5] == "dev" && n.blocks[c[4]] && validPodUID(c[6]) == nil:
		return nil
	}
	return fmt.Errorf("not a path the simulator hands a driver for any volume this journal wrote a vol_data.json for")
}

// derivedFile checks a file record: a vol_data.json the journal has the
// record of, a block volume's bind-mount file or a pod's device symlink.
func (f *FileSystem) derivedFile(p string, jc *JournalContents, n journalNames) error {
	c := f.rel(p)
	if filepath.Base(p) == VolDataFileName {
		if _, ok := jc.VolData[filepath.Dir(p)]; ok {
			return nil
		}
		return fmt.Errorf("no vol_data.json record of this journal for %s", filepath.Dir(p))
	}
	if err := f.derivedMount(p, n); err == nil && len(c) == 7 && c[5] == "dev" {
		return nil
	}
	if len(c) == 5 && c[0] == "pods" && c[2] == "volumeDevices" && c[3] == EscapeQualifiedName(PluginName) && n.blocks[c[4]] && validPodUID(c[1]) == nil {
		return nil
	}
	return fmt.Errorf("not a file the simulator makes for any volume this journal wrote a vol_data.json for")
}

// derivedDir checks a directory record: a directory of the kubelet's
// layout (docs/kubelet.md §1.2-§1.4) with valid names.
func (f *FileSystem) derivedDir(p string) error {
	c := f.rel(p)
	bad := fmt.Errorf("not a directory of the kubelet's layout")
	at := func(i int, ok func(string) bool) bool { return len(c) <= i || ok(c[i]) }
	is := func(names ...string) func(string) bool {
		return func(s string) bool {
			for _, n := range names {
				if s == n {
					return true
				}
			}
			return false
		}
	}
	spec := func(s string) bool { return manifests.ValidateSpecName(s, field.NewPath("spec")) == nil }
	uid := func(s string) bool { return validPodUID(s) == nil }
	switch {
	case c[0] == "pods" && len(c) <= 6 && at(1, uid) && at(2, is("volumes", "volumeDevices", "plugins")):
		switch {
		case len(c) <= 3:
			return nil
		case c[2] == "volumes" && at(3, is(EscapeQualifiedName(PluginName))) && at(4, spec) && at(5, is("mount")):
			return nil
		case c[2] == "volumeDevices" && len(c) == 4 && c[3] == EscapeQualifiedName(PluginName):
			return nil
		}
	case c[0] == "plugins" && len(c) <= 6 && at(1, is("kubernetes.io")) && at(2, is("csi")):
		switch {
		case len(c) <= 3:
			return nil
		case c[3] == "volumeDevices" && (len(c) == 4 || (len(c) <= 6 && at(4, is("staging", "publish")) && at(5, spec)) || (len(c) <= 6 && spec(c[4]) && at(5, is("dev", "data")))):
			return nil
		case c[3] != "volumeDevices" && manifests.ValidateDriverName(c[3], field.NewPath("driver")) == nil && at(4, sha256HexName.MatchString) && at(5, is(globalMountDir)):
			return nil
		}
	case c[0] == "plugins_registry" && len(c) == 1:
		return nil
	}
	return bad
}

// UnfinishedIntent tells whether a mount record of a publish target or a
// globalmount, or the file record of a vol_data.json, that no vol_data.json
// record of the journal covers is what a genuine run leaves when it is
// killed before that record: both come first (SetUpAt and MountDevice
// mark the path, make the dir, then journal and write vol_data.json, then
// call the driver). Then nothing is mounted at the path and no
// vol_data.json was made: there is nothing to act on, and no forgery to
// report. Such a record is still not taken.
func (f *FileSystem) UnfinishedIntent(kind, p string, jc *JournalContents) bool {
	if _, ok := jc.VolData[filepath.Dir(p)]; ok {
		return false
	}
	c := f.rel(p)
	switch {
	case kind == recordMount && len(c) == 6 && ((c[0] == "pods" && c[5] == "mount") || (c[0] == "plugins" && c[5] == globalMountDir)):
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return true
		}
		mnt, err := IsMountPoint(p)
		return err == nil && !mnt
	case kind == recordFile && filepath.Base(p) == VolDataFileName:
		_, err := os.Lstat(p)
		return errors.Is(err, os.ErrNotExist)
	}
	return false
}

// Adopt takes over what an earlier run's journal lists (`cleanup`).
// Only paths strictly inside the root dir are taken, and the root dir
// itself when the run made it (it goes only if empty): a journal is a file
// anyone with access to the root dir could edit, and `cleanup` must never
// be led to remove or unmount anything outside it.
//
// Each record is checked against what the simulator would have made
// (journalcheck.go); refuse is told of every one that is not.
func (f *FileSystem) Adopt(jc *JournalContents, refuse func(kind, p string, err error)) {
	// Where a journaled path crosses a symlink or a mount now, nothing of
	// it is taken, and the refusal is noted (exit code 2).
	f.mu.Lock()
	for p, kind := range jc.Owned {
		if kind == RecordDir {
			f.journaledDirs[p] = true
		}
	}
	f.mu.Unlock()
	inside := f.insideParentsCheck(jc, refuse)
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.names(jc, refuse)
	for _, p := range jc.order {
		kind := jc.Owned[p]
		madeRoot := p == filepath.Clean(f.root) && kind == RecordDir
		if !(madeRoot || inside(p)) || f.owned[p] {
			continue
		}
		if !madeRoot {
			err := f.derivedDir(p)
			if kind != RecordDir {
				err = f.derivedFile(p, jc, n)
			}
			if err != nil {
				refuse(kind, p, err)
				continue
			}
		}
		f.owned[p] = true
		f.ownedDirs[p] = kind == RecordDir
		f.created = append(f.created, p)
	}
	for p := range jc.MountPaths {
		if !inside(p) {
			continue
		}
		if err := f.derivedMount(p, n); err != nil {
			refuse(recordMount, p, err)
			continue
		}
		f.mountPaths[p] = true
		if op, ok := jc.InFlight[p]; ok {
			f.inFlight[p] = op
		}
	}
	for dir, data := range jc.VolData {
		if data != nil && inside(dir) {
			f.journalVolData[dir] = data
		}
	}
}

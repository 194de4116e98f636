package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// Recover finishes what earlier runs left under the root dir, as a
// restarted kubelet does (reconstructVolume in the volume manager's
// reconstruction): it registers the driver, rebuilds the volumes from what
// is on disk (pod volume dirs and their vol_data.json, device mount paths,
// block volume paths), takes only those its own journals list, marks them
// uncertain, and tears each down through the driver: NodeUnpublishVolume,
// NodeUnstageVolume, the block unmap steps. The journals go when
// everything they list is gone.
//
// after, when not nil, finishes what the cluster's controllers of the
// interrupted run left (the simulated sidecars: detach, delete); it runs
// after the kubelet's teardown and while the root dir's lock is still
// held, as Run's Plan.Controller does.
func (k *Kubelet) Recover(ctx context.Context, after func(context.Context) []error) *Outcome {
	out := &Outcome{}
	journals, err := rootdir.Journals(k.vm.Layout.Root)
	if err == nil && len(journals) == 0 {
		if after != nil {
			out.TeardownErrs = after(ctx)
		}
		out.Leftovers = &volumemanager.Leftovers{}
		if len(out.TeardownErrs) == 0 && ctx.Err() == nil {
			k.vm.FS.ReleaseLock()
		}
		return out
	}
	if stop := k.adoptJournals(ctx, journals); stop != nil {
		return stop
	}
	reg, err := k.vm.Register(ctx)
	out.Registration, out.RegErr = reg, err
	if err != nil {
		return out
	}
	pods := k.reconstruct(csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "Reconstruct"}))
	out.Pods = len(pods)
	k.teardownAll(ctx, teardown{pods: pods, allDevices: true, after: after}, out)
	if out.Leftovers.NothingOnDisk() && len(out.TeardownErrs) == 0 {
		k.removeJournals(journals, out)
	}
	return out
}

// adoptJournals reads the journals and takes over what they list. It
// returns the outcome to end with when nothing may be done: a journal
// that cannot be read (refused before anything is touched: the lock file
// too goes back to what it was), or a symlink or a mount where the
// journals' dirs were, which hides part of what the run left (a volume's
// publish behind a mount over its dir): tearing down the rest would
// unstage a device still published.
func (k *Kubelet) adoptJournals(ctx context.Context, journals []string) *Outcome {
	for _, j := range journals {
		jc, err := rootdir.ReadJournal(j)
		if err != nil {
			k.vm.FS.RestoreLock()
			return &Outcome{MountErr: err}
		}
		k.vm.FS.Adopt(jc, k.refuseRecord(ctx, j, jc))
	}
	if refused := k.vm.FS.Refusals(); len(refused) > 0 {
		return &Outcome{
			MountErr:  fmt.Errorf("%w; nothing was torn down: take it away, then run cleanup again", refused[0]),
			Leftovers: &volumemanager.Leftovers{Symlinks: k.vm.FS.RefusedSymlinks(), Refused: refused},
		}
	}
	return nil
}

// removeJournals removes the journals once all they list is gone, from
// the root dir's descriptor: a directory mounted over the journal dir
// since is refused, its files untouched.
func (k *Kubelet) removeJournals(journals []string, out *Outcome) {
	removed := true
	for _, j := range journals {
		if err := rootdir.RemoveInSimDir(k.vm.Layout.Root, filepath.Base(j), nil); err != nil && !errors.Is(err, os.ErrNotExist) {
			k.vm.FS.Seen(err)
			removed = false
		}
	}
	out.Leftovers.Symlinks, out.Leftovers.Refused = k.vm.FS.RefusedSymlinks(), k.vm.FS.Refusals()
	if removed {
		rootdir.RemoveSimDir(k.vm.Layout.Root)
		k.vm.RemoveEmptyCreated()
	}
}

// refuseRecord reports a journal record that names a path the simulator
// would not have made: it is not acted on. An intent of a run killed
// before its vol_data.json record is not taken either, but it is no
// forgery: not reported.
func (k *Kubelet) refuseRecord(ctx context.Context, journal string, jc *rootdir.JournalContents) func(kind, p string, err error) {
	n := 0
	return func(kind, p string, err error) {
		if k.vm.FS.UnfinishedIntent(kind, p, jc) {
			return
		}
		if n++; n <= 20 {
			k.vm.Trace.Warn(ctx, fmt.Sprintf("journal %s: %s record %s refused, not touched: %v", journal, kind, p, err))
		}
	}
}

// reconstruct records every volume of the journals found on disk in the
// actual state, uncertain, and returns the pods that hold them.
func (k *Kubelet) reconstruct(ctx context.Context) []*corev1.Pod {
	byUID := map[string]*corev1.Pod{}
	podOf := func(uid string) *corev1.Pod {
		if p, ok := byUID[uid]; ok {
			return p
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "(reconstructed)", UID: types.UID(uid)}}
		byUID[uid] = p
		k.vm.State.MarkPodDirs(uid)
		return p
	}
	var order []string
	add := func(uid string, v *csiplugin.VolumeSpec) {
		if err := validReconstructed(uid, v); err != nil {
			k.vm.Trace.Warn(ctx, "not reconstructed, its vol_data.json names what no API server would allow: "+err.Error())
			return
		}
		if _, ok := byUID[uid]; !ok {
			order = append(order, uid)
		}
		pod := podOf(uid)
		k.vm.State.RecordMount(pod, v.UniqueName(uid), v, csiplugin.AsUncertain(errors.New("reconstructed")))
		k.vm.State.NotePodVolume(uid, v.UniqueName(uid))
		k.vm.Trace.Note(ctx, false, "reconstructed "+string(v.Mode)+" volume "+v.SpecName+" of pod "+uid+" (driver "+v.Driver+", handle "+v.Handle+"): uncertain, to be torn down")
		k.recordReconstructedDevice(v)
	}
	k.restoreJournaledVolumeData(ctx)
	for _, f := range k.ownedMatches(filepath.Join(k.vm.Layout.Root, "pods", "*", "volumes", rootdir.EscapeQualifiedName(rootdir.PluginName), "*", rootdir.VolDataFileName)) {
		uid := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f)))))
		if v := k.fsVolumeFromData(filepath.Dir(f)); v != nil {
			add(uid, v)
		}
	}
	for _, p := range k.ownedMatches(filepath.Join(k.vm.Layout.VolumeDevicesDir(), "publish", "*", "*")) {
		uid, spec := filepath.Base(p), filepath.Base(filepath.Dir(p))
		if v := k.blockVolumeFromData(spec); v != nil {
			add(uid, v)
		}
	}
	for _, f := range k.ownedMatches(filepath.Join(k.vm.Layout.PluginDir(), "*", "*", rootdir.VolDataFileName)) {
		if data, err := k.vm.FS.LoadVolumeData(filepath.Dir(f)); err == nil {
			v := &csiplugin.VolumeSpec{SpecName: data["volumeHandle"], Driver: data["driverName"], Handle: data["volumeHandle"],
				Mode: storagev1.VolumeLifecyclePersistent, PV: &corev1.PersistentVolume{}}
			if err := manifests.ValidateDriverName(v.Driver, field.NewPath("driverName")); err != nil {
				k.vm.Trace.Warn(ctx, "not reconstructed, its vol_data.json names what no API server would allow: "+err.Error())
				continue
			}
			k.recordReconstructedDevice(v)
		}
	}
	for _, f := range k.ownedMatches(filepath.Join(k.vm.Layout.VolumeDevicesDir(), "*", "data", rootdir.VolDataFileName)) {
		if v := k.blockVolumeFromData(filepath.Base(filepath.Dir(filepath.Dir(f)))); v != nil {
			k.recordReconstructedDevice(v)
		}
	}
	pods := make([]*corev1.Pod, 0, len(order))
	for _, uid := range order {
		pods = append(pods, byUID[uid])
	}
	return pods
}

// ownedMatches are the paths matching pattern that a journal lists and
// that still exist.
func (k *Kubelet) ownedMatches(pattern string) []string {
	paths, _ := filepath.Glob(pattern)
	var out []string
	for _, p := range paths {
		if k.vm.FS.IsOwned(p) || k.vm.FS.IsMountPath(p) {
			out = append(out, p)
		}
	}
	return out
}

func (k *Kubelet) fsVolumeFromData(dir string) *csiplugin.VolumeSpec {
	data, err := k.vm.FS.LoadVolumeData(dir)
	if err != nil {
		return nil
	}
	return volumeFromData(data)
}

// restoreJournaledVolumeData writes back the vol_data.json of a pod volume
// that a failed republish took away while the volume stayed published (up
// to 1.35, docs/kubelet.md §1.7), from the copy the run's journal holds.
// A real kubelet can build no unmounter for such a volume and never
// unpublishes it; `cleanup` is there to finish what the run left, so it
// rebuilds the volume and unpublishes it through the driver.
func (k *Kubelet) restoreJournaledVolumeData(ctx context.Context) {
	dirs, copies := k.vm.FS.JournaledVolumeData()
	pattern := filepath.Join(k.vm.Layout.Root, "pods", "*", "volumes", rootdir.EscapeQualifiedName(rootdir.PluginName), "*")
	for _, dir := range dirs {
		if ok, _ := filepath.Match(pattern, dir); !ok {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, rootdir.VolDataFileName)); !os.IsNotExist(err) {
			continue
		}
		uid, v := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir)))), volumeFromData(copies[dir])
		if err := validReconstructed(uid, v); err != nil || v.SpecName != filepath.Base(dir) {
			continue
		}
		if err := k.vm.FS.CheckPath(dir); err != nil {
			k.vm.Trace.Warn(ctx, "not restoring "+filepath.Join(dir, rootdir.VolDataFileName)+" from the journal: "+err.Error())
			continue
		}
		if err := k.vm.FS.MkdirAll(dir, 0o750); err != nil {
			k.vm.Trace.Warn(ctx, "cannot restore "+filepath.Join(dir, rootdir.VolDataFileName)+" from the journal: "+err.Error())
			continue
		}
		if err := k.vm.FS.SaveVolumeData(dir, copies[dir]); err != nil {
			k.vm.Trace.Warn(ctx, "cannot restore "+filepath.Join(dir, rootdir.VolDataFileName)+" from the journal: "+err.Error())
			continue
		}
		k.vm.Trace.Note(ctx, false, "restored "+filepath.Join(dir, rootdir.VolDataFileName)+" from the journal: a failed republish removed it while the volume stayed published, and a real kubelet would never unpublish it (docs/kubelet.md §1.7)")
	}
}

// volumeFromData is the volume a pod volume dir's vol_data.json describes.
func volumeFromData(data map[string]string) *csiplugin.VolumeSpec {
	v := &csiplugin.VolumeSpec{PodVolume: data["specVolID"], SpecName: data["specVolID"], Driver: data["driverName"],
		Handle: data["volumeHandle"], Mode: storagev1.VolumeLifecycleMode(data["volumeLifecycleMode"])}
	if v.Mode == "" || v.Mode == storagev1.VolumeLifecyclePersistent {
		v.Mode = storagev1.VolumeLifecyclePersistent
		v.PV = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.SpecName}}
	}
	return v
}

func (k *Kubelet) blockVolumeFromData(specName string) *csiplugin.VolumeSpec {
	data, err := k.vm.FS.LoadVolumeData(k.vm.Layout.BlockDataDir(specName))
	if err != nil {
		return nil
	}
	return &csiplugin.VolumeSpec{PodVolume: specName, SpecName: specName, Driver: data["driverName"], Handle: data["volumeHandle"],
		Mode: storagev1.VolumeLifecyclePersistent, Block: true,
		PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: specName}}}
}

// recordReconstructedDevice records the device of a persistent volume as
// uncertain when something of it is on disk: a staged filesystem volume's
// vol_data.json, or a block volume's data dir.
func (k *Kubelet) recordReconstructedDevice(v *csiplugin.VolumeSpec) {
	if !v.Persistent() {
		return
	}
	unique := v.UniqueName("")
	if _, ok := k.vm.State.Device(unique); ok {
		return
	}
	if v.Block {
		if _, err := os.Stat(k.vm.Layout.BlockDataDir(v.SpecName)); err != nil {
			return
		}
	} else if _, err := k.vm.FS.LoadVolumeData(filepath.Dir(k.vm.Layout.DeviceMountPath(v.Driver, v.Handle))); err != nil {
		return
	}
	k.vm.State.RecordDevice(unique, v, csiplugin.AsUncertain(errors.New("reconstructed")))
}

// validReconstructed checks what was read back from disk before any path is
// built from it: a vol_data.json edited by hand must not lead out of the
// root dir.
func validReconstructed(uid string, v *csiplugin.VolumeSpec) error {
	if err := manifests.ValidatePodUID(uid, field.NewPath("pod uid")); err != nil {
		return err
	}
	if err := manifests.ValidateDriverName(v.Driver, field.NewPath("driverName")); err != nil {
		return err
	}
	return manifests.ValidateSpecName(v.SpecName, field.NewPath("specVolID"))
}

// DriverWork lists what the journals under root record that only the
// driver can undo and that is still there: the paths handed to it
// (targets, staging paths, block publish paths) and the volumes whose
// vol_data.json a journal copied. Nothing listed: `cleanup` can finish
// without the driver (RecoverWithoutDriver).
func DriverWork(root string) ([]string, error) {
	journals, err := rootdir.Journals(root)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if _, err := os.Lstat(p); err == nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, j := range journals {
		jc, err := rootdir.ReadJournal(j)
		if err != nil {
			return nil, err
		}
		for p := range jc.MountPaths {
			add(p)
		}
		for p := range jc.InFlight {
			add(p)
		}
		for dir := range jc.VolData {
			add(filepath.Join(dir, rootdir.VolDataFileName))
		}
	}
	slices.Sort(out)
	return out, nil
}

// RecoverWithoutDriver finishes, without the driver, the journals under
// the root dir that list nothing for the driver (DriverWork is empty): the
// directories and files the runs made are removed as Recover removes
// them, and the journals go.
func (k *Kubelet) RecoverWithoutDriver(ctx context.Context) *Outcome {
	journals, err := rootdir.Journals(k.vm.Layout.Root)
	if err != nil {
		return &Outcome{MountErr: err}
	}
	if stop := k.adoptJournals(ctx, journals); stop != nil {
		return stop
	}
	out := &Outcome{Leftovers: k.vm.Cleanup(context.WithoutCancel(ctx), false)}
	if out.Leftovers.NothingOnDisk() {
		k.removeJournals(journals, out)
	}
	return out
}

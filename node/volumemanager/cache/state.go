// Package cache is the volume manager's actual state of the world, as
// pkg/kubelet/volumemanager/cache/actual_state_of_world.go keeps it: the
// devices staged (or uncertain) per volume, the mounts per pod, the pods'
// volumes and dirs, the SELinux labels in use and the claims' sizes for
// expansion. It holds data only: the operations that change it are the
// kubelet's (node), over the CSI plugin (node/csi).
package cache

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// mountStatus is what the kubelet's actual state of the world holds for a
// device or a pod's mount.
type mountStatus int

const (
	StatusMounted mountStatus = iota
	statusUncertain
)

type deviceState struct {
	Driver, Handle string
	Spec           *csiplugin.VolumeSpec
	status         mountStatus
}

type MountKey struct {
	PodUID, UniqueName string
}

type mountState struct {
	pod    *corev1.Pod
	Spec   *csiplugin.VolumeSpec
	Status mountStatus
}

// ActualState is the kubelet's actual state of the world
// (cache/actual_state_of_world.go) with the desired state's per-volume
// SELinux labels: everything a filesystem volume and a block volume both
// record, behind one lock so that the reconciler's operations can run in
// parallel (`load`). Mounts are indexed by pod and counted by volume, so
// teardown never scans the whole node. The registered drivers are the
// plugin's (csiDrivers).
type ActualState struct {
	mu         sync.Mutex
	devices    map[string]*deviceState
	mounts     map[string]map[string]*mountState // pod UID -> unique volume name
	Users      map[string]int                    // unique volume name -> pods mounting it
	podDirs    map[string]bool                   // pods whose directories this run made
	podVolumes map[string]map[string]bool        // pod UID -> unique names of the volumes it asked for
	seLinux    map[string]*csiplugin.SELinuxVolume
	claimSizes map[string]*claimSize // unique volume name -> its claim's size (expandinuse.go)
}

func NewActualState() *ActualState {
	return &ActualState{
		devices:    map[string]*deviceState{},
		mounts:     map[string]map[string]*mountState{},
		Users:      map[string]int{},
		podDirs:    map[string]bool{},
		podVolumes: map[string]map[string]bool{},
		seLinux:    map[string]*csiplugin.SELinuxVolume{},
		claimSizes: map[string]*claimSize{},
	}
}

// Device returns a copy of the device's state.
func (s *ActualState) Device(unique string) (deviceState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[unique]
	if !ok {
		return deviceState{}, false
	}
	return *d, true
}

// DeviceMounted tells whether the device is globally mounted for sure, so
// that MountDevice (SetUpDevice) is skipped.
func (s *ActualState) DeviceMounted(unique string) bool {
	d, ok := s.Device(unique)
	return ok && d.status == StatusMounted
}

// RecordDevice updates the actual state of a device after SetUpDevice or
// MountDevice.
func (s *ActualState) RecordDevice(unique string, v *csiplugin.VolumeSpec, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.devices[unique] = &deviceState{Driver: v.Driver, Handle: v.Handle, Spec: v, status: StatusMounted}
	case csiplugin.KindOf(err) == csiplugin.Uncertain:
		s.devices[unique] = &deviceState{Driver: v.Driver, Handle: v.Handle, Spec: v, status: statusUncertain}
	case csiplugin.KindOf(err) == csiplugin.Final:
		delete(s.devices, unique)
	}
}

func (s *ActualState) MarkDeviceUncertain(unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[unique]; ok {
		d.status = statusUncertain
	}
}

func (s *ActualState) ForgetDevice(unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.devices, unique)
	delete(s.claimSizes, unique)
}

// DevicesNotInUse are the devices no pod mounts any more, sorted.
func (s *ActualState) DevicesNotInUse(among []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, u := range among {
		if _, ok := s.devices[u]; ok && s.Users[u] == 0 && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// AllDevices returns the unique names of every device, sorted.
func (s *ActualState) AllDevices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.devices)
}

// RecordMount updates the actual state of a pod's volume after SetUp or
// MapPodDevice, as markVolumeErrorState does: an uncertain error marks only a
// volume not mounted yet, a final error forgets only an uncertain one, so a
// failed remount of a mounted volume leaves it mounted.
func (s *ActualState) RecordMount(pod *corev1.Pod, unique string, v *csiplugin.VolumeSpec, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := string(pod.UID)
	m, known := s.mounts[uid][unique]
	switch {
	case err == nil && known:
		m.Status = StatusMounted
	case err == nil:
		s.addMount(uid, unique, &mountState{pod: pod, Spec: v, Status: StatusMounted})
	case csiplugin.KindOf(err) == csiplugin.Uncertain && !known:
		s.addMount(uid, unique, &mountState{pod: pod, Spec: v, Status: statusUncertain})
	case csiplugin.KindOf(err) == csiplugin.Final && known && m.Status == statusUncertain:
		s.removeMount(uid, unique)
	}
}

func (s *ActualState) addMount(uid, unique string, m *mountState) {
	if s.mounts[uid] == nil {
		s.mounts[uid] = map[string]*mountState{}
	}
	s.mounts[uid][unique] = m
	s.Users[unique]++
}

func (s *ActualState) removeMount(uid, unique string) {
	if _, ok := s.mounts[uid][unique]; !ok {
		return
	}
	delete(s.mounts[uid], unique)
	if len(s.mounts[uid]) == 0 {
		delete(s.mounts, uid)
	}
	if s.Users[unique]--; s.Users[unique] <= 0 {
		delete(s.Users, unique)
	}
}

func (s *ActualState) ForgetMount(key MountKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeMount(key.PodUID, key.UniqueName)
}

// Mount returns a copy of a pod's mount.
func (s *ActualState) Mount(key MountKey) (mountState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mounts[key.PodUID][key.UniqueName]
	if !ok {
		return mountState{}, false
	}
	return *m, true
}

// MountedElsewhere tells whether another pod than this one mounts the volume.
func (s *ActualState) MountedElsewhere(unique, podUID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.Users[unique]
	if _, own := s.mounts[podUID][unique]; own {
		n--
	}
	return n > 0
}

func (s *ActualState) PodHasMounts(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mounts[uid]) > 0
}

// PodMounts returns the pod's mounts in the pod's volume order, so that
// traces are reproducible.
func (s *ActualState) PodMounts(pod *corev1.Pod) []MountKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := string(pod.UID)
	order := map[string]int{}
	for i, v := range pod.Spec.Volumes {
		order[v.Name] = i
	}
	keys := make([]MountKey, 0, len(s.mounts[uid]))
	for unique := range s.mounts[uid] {
		keys = append(keys, MountKey{PodUID: uid, UniqueName: unique})
	}
	slices.SortFunc(keys, func(a, b MountKey) int {
		if d := order[s.mounts[uid][a.UniqueName].Spec.PodVolume] - order[s.mounts[uid][b.UniqueName].Spec.PodVolume]; d != 0 {
			return d
		}
		return compareStrings(a.UniqueName, b.UniqueName)
	})
	return keys
}

// NotePodVolume records that a pod asked for a volume, so that its
// teardown looks at the volume's device even when the pod's mount never
// got into the actual state.
func (s *ActualState) NotePodVolume(uid, unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.podVolumes[uid] == nil {
		s.podVolumes[uid] = map[string]bool{}
	}
	s.podVolumes[uid][unique] = true
}

// PodVolumeNames returns the volumes a pod asked for.
func (s *ActualState) PodVolumeNames(uid string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.podVolumes[uid])
}

// PrunePodVolumes forgets the volumes of a pod that neither it mounts nor
// a device holds any more.
func (s *ActualState) PrunePodVolumes(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for u := range s.podVolumes[uid] {
		if _, mounted := s.mounts[uid][u]; !mounted {
			if _, dev := s.devices[u]; !dev {
				delete(s.podVolumes[uid], u)
			}
		}
	}
	if len(s.podVolumes[uid]) == 0 {
		delete(s.podVolumes, uid)
	}
}

func (s *ActualState) MarkPodDirs(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podDirs[uid] = true
}

func (s *ActualState) PodHasDirs(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.podDirs[uid]
}

func (s *ActualState) PodDirUIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.podDirs)
}

// seLinuxVolume returns the desired state's label of the volume, and
// stores first when the volume has none yet (the first pod's label wins).
func (s *ActualState) SELinuxVolume(unique string, first func() *csiplugin.SELinuxVolume) (*csiplugin.SELinuxVolume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.seLinux[unique]; ok {
		return sv, true
	}
	sv := first()
	s.seLinux[unique] = sv
	return sv, false
}

func (s *ActualState) SELinuxLabel(unique string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.seLinux[unique]; ok {
		return sv.Effective
	}
	return ""
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// InitClaimSize is VerifyControllerAttachedVolume's InitializeClaimSize:
// the claim's status.capacity when the volume is verified attached, kept
// while the volume stays attached (a second pod does not change it).
func (s *ActualState) InitClaimSize(unique string, v *csiplugin.VolumeSpec) {
	if v.PV == nil || v.PVC == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.claimSizes[unique]; ok && !cs.Size.IsZero() {
		return
	}
	s.claimSizes[unique] = &claimSize{Size: v.PVC.Status.Capacity[corev1.ResourceStorage].DeepCopy()}
}

// claimSize is what the actual state of the world holds of an attached
// volume's claim: persistentVolumeSize (the claim's size as the kubelet last
// knew it) and volumeInUseErrorForExpansion.
type claimSize struct {
	Size       resource.Quantity
	InUseError bool
}

// MarkResized is MarkVolumeAsResized.
func (s *ActualState) MarkResized(unique string, size resource.Quantity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.claimSizes[unique]; ok {
		cs.Size = size
	}
}

// MarkInUseExpansionError is MarkForInUseExpansionError.
func (s *ActualState) MarkInUseExpansionError(unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.claimSizes[unique]; ok {
		cs.InUseError = true
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

func (s *ActualState) ClaimSize(unique string) claimSize {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.claimSizes[unique]; ok {
		return *cs
	}
	return claimSize{}
}

// VolumeInUse tells whether the volume is staged (or uncertain) or mounted
// by a pod.
func (s *ActualState) VolumeInUse(unique string) bool {
	if _, ok := s.Device(unique); ok {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Users[unique] > 0
}

package node

import (
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"

	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// mountStatus is what the kubelet's actual state of the world holds for a
// device or a pod's mount.
type mountStatus int

const (
	statusMounted mountStatus = iota
	statusUncertain
)

type deviceState struct {
	driver, handle string
	spec           *csiplugin.VolumeSpec
	status         mountStatus
}

type mountKey struct {
	podUID, uniqueName string
}

type mountState struct {
	pod    *corev1.Pod
	spec   *csiplugin.VolumeSpec
	status mountStatus
}

// actualState is the kubelet's actual state of the world
// (cache/actual_state_of_world.go) with the desired state's per-volume
// SELinux labels: everything a filesystem volume and a block volume both
// record, behind one lock so that the reconciler's operations can run in
// parallel (`load`). Mounts are indexed by pod and counted by volume, so
// teardown never scans the whole node. The registered drivers are the
// plugin's (csiDrivers).
type actualState struct {
	mu         sync.Mutex
	devices    map[string]*deviceState
	mounts     map[string]map[string]*mountState // pod UID -> unique volume name
	users      map[string]int                    // unique volume name -> pods mounting it
	podDirs    map[string]bool                   // pods whose directories this run made
	podVolumes map[string]map[string]bool        // pod UID -> unique names of the volumes it asked for
	seLinux    map[string]*csiplugin.SELinuxVolume
	claimSizes map[string]*claimSize // unique volume name -> its claim's size (expandinuse.go)
}

func newActualState() *actualState {
	return &actualState{
		devices:    map[string]*deviceState{},
		mounts:     map[string]map[string]*mountState{},
		users:      map[string]int{},
		podDirs:    map[string]bool{},
		podVolumes: map[string]map[string]bool{},
		seLinux:    map[string]*csiplugin.SELinuxVolume{},
		claimSizes: map[string]*claimSize{},
	}
}

// device returns a copy of the device's state.
func (s *actualState) device(unique string) (deviceState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[unique]
	if !ok {
		return deviceState{}, false
	}
	return *d, true
}

// deviceMounted tells whether the device is globally mounted for sure, so
// that MountDevice (SetUpDevice) is skipped.
func (s *actualState) deviceMounted(unique string) bool {
	d, ok := s.device(unique)
	return ok && d.status == statusMounted
}

// recordDevice updates the actual state of a device after SetUpDevice or
// MountDevice.
func (s *actualState) recordDevice(unique string, v *csiplugin.VolumeSpec, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.devices[unique] = &deviceState{driver: v.Driver, handle: v.Handle, spec: v, status: statusMounted}
	case csiplugin.KindOf(err) == csiplugin.Uncertain:
		s.devices[unique] = &deviceState{driver: v.Driver, handle: v.Handle, spec: v, status: statusUncertain}
	case csiplugin.KindOf(err) == csiplugin.Final:
		delete(s.devices, unique)
	}
}

func (s *actualState) markDeviceUncertain(unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[unique]; ok {
		d.status = statusUncertain
	}
}

func (s *actualState) forgetDevice(unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.devices, unique)
	delete(s.claimSizes, unique)
}

// devicesNotInUse are the devices no pod mounts any more, sorted.
func (s *actualState) devicesNotInUse(among []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, u := range among {
		if _, ok := s.devices[u]; ok && s.users[u] == 0 && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// allDevices returns the unique names of every device, sorted.
func (s *actualState) allDevices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.devices)
}

// recordMount updates the actual state of a pod's volume after SetUp or
// MapPodDevice, as markVolumeErrorState does: an uncertain error marks only a
// volume not mounted yet, a final error forgets only an uncertain one, so a
// failed remount of a mounted volume leaves it mounted.
func (s *actualState) recordMount(pod *corev1.Pod, unique string, v *csiplugin.VolumeSpec, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := string(pod.UID)
	m, known := s.mounts[uid][unique]
	switch {
	case err == nil && known:
		m.status = statusMounted
	case err == nil:
		s.addMount(uid, unique, &mountState{pod: pod, spec: v, status: statusMounted})
	case csiplugin.KindOf(err) == csiplugin.Uncertain && !known:
		s.addMount(uid, unique, &mountState{pod: pod, spec: v, status: statusUncertain})
	case csiplugin.KindOf(err) == csiplugin.Final && known && m.status == statusUncertain:
		s.removeMount(uid, unique)
	}
}

func (s *actualState) addMount(uid, unique string, m *mountState) {
	if s.mounts[uid] == nil {
		s.mounts[uid] = map[string]*mountState{}
	}
	s.mounts[uid][unique] = m
	s.users[unique]++
}

func (s *actualState) removeMount(uid, unique string) {
	if _, ok := s.mounts[uid][unique]; !ok {
		return
	}
	delete(s.mounts[uid], unique)
	if len(s.mounts[uid]) == 0 {
		delete(s.mounts, uid)
	}
	if s.users[unique]--; s.users[unique] <= 0 {
		delete(s.users, unique)
	}
}

func (s *actualState) forgetMount(key mountKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeMount(key.podUID, key.uniqueName)
}

// mount returns a copy of a pod's mount.
func (s *actualState) mount(key mountKey) (mountState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mounts[key.podUID][key.uniqueName]
	if !ok {
		return mountState{}, false
	}
	return *m, true
}

// mountedElsewhere tells whether another pod than this one mounts the volume.
func (s *actualState) mountedElsewhere(unique, podUID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.users[unique]
	if _, own := s.mounts[podUID][unique]; own {
		n--
	}
	return n > 0
}

func (s *actualState) podHasMounts(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mounts[uid]) > 0
}

// podMounts returns the pod's mounts in the pod's volume order, so that
// traces are reproducible.
func (s *actualState) podMounts(pod *corev1.Pod) []mountKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := string(pod.UID)
	order := map[string]int{}
	for i, v := range pod.Spec.Volumes {
		order[v.Name] = i
	}
	keys := make([]mountKey, 0, len(s.mounts[uid]))
	for unique := range s.mounts[uid] {
		keys = append(keys, mountKey{podUID: uid, uniqueName: unique})
	}
	slices.SortFunc(keys, func(a, b mountKey) int {
		if d := order[s.mounts[uid][a.uniqueName].spec.PodVolume] - order[s.mounts[uid][b.uniqueName].spec.PodVolume]; d != 0 {
			return d
		}
		return compareStrings(a.uniqueName, b.uniqueName)
	})
	return keys
}

// notePodVolume records that a pod asked for a volume, so that its
// teardown looks at the volume's device even when the pod's mount never
// got into the actual state.
func (s *actualState) notePodVolume(uid, unique string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.podVolumes[uid] == nil {
		s.podVolumes[uid] = map[string]bool{}
	}
	s.podVolumes[uid][unique] = true
}

// podVolumeNames returns the volumes a pod asked for.
func (s *actualState) podVolumeNames(uid string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.podVolumes[uid])
}

// prunePodVolumes forgets the volumes of a pod that neither it mounts nor
// a device holds any more.
func (s *actualState) prunePodVolumes(uid string) {
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

func (s *actualState) markPodDirs(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podDirs[uid] = true
}

func (s *actualState) podHasDirs(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.podDirs[uid]
}

func (s *actualState) podDirUIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.podDirs)
}

// seLinuxVolume returns the desired state's label of the volume, and
// stores first when the volume has none yet (the first pod's label wins).
func (s *actualState) seLinuxVolume(unique string, first func() *csiplugin.SELinuxVolume) (*csiplugin.SELinuxVolume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.seLinux[unique]; ok {
		return sv, true
	}
	sv := first()
	s.seLinux[unique] = sv
	return sv, false
}

func (s *actualState) seLinuxLabel(unique string) string {
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

package node

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"

	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
)

// SELinux is the node's SELinux as the kubelet's label translator sees it
// (pkg/volume/util/selinux.go, go-selinux label.InitLabels).
type SELinux struct {
	// Enabled: the node has SELinux on. Off, no label is ever computed.
	Enabled bool
	// Level, when set, replaces the random MCS level InitLabels allocates
	// for options without a level (--selinux-level), so runs are
	// reproducible.
	Level string
	// Rand picks the two MCS categories; nil uses math/rand.
	Rand func(n int) int
}

// fileLabelBase is the file label of the usual container policy
// (lxc_contexts): user, role and type before the pod's user and level are
// applied.
const fileLabelBase = "system_u:object_r:container_file_t"

// FileLabel is translator.SELinuxOptionsToFileLabel: no options, or options
// with no field set, give no label; only user and level change the file
// label (role and type change the process label only), and a missing level
// is a freshly allocated random one for every call.
func (s *SELinux) FileLabel(opts *corev1.SELinuxOptions) string {
	if opts == nil || (opts.User == "" && opts.Role == "" && opts.Type == "" && opts.Level == "") {
		return ""
	}
	parts := strings.SplitN(fileLabelBase, ":", 3)
	if opts.User != "" {
		parts[0] = opts.User
	}
	level := opts.Level
	if level == "" {
		level = s.randomLevel()
	}
	return strings.Join(parts, ":") + ":" + level
}

// randomLevel is go-selinux's uniqMcs(1024): two different categories, the
// lower first.
func (s *SELinux) randomLevel() string {
	if s.Level != "" {
		return s.Level
	}
	r := s.Rand
	if r == nil {
		r = rand.IntN
	}
	c1, c2 := r(1024), r(1024)
	for c1 == c2 {
		c2 = r(1024)
	}
	if c1 > c2 {
		c1, c2 = c2, c1
	}
	return fmt.Sprintf("s0:c%d,c%d", c1, c2)
}

// containerSELinuxOptions is util.GetPodVolumeNames' collection: for every
// init, regular and ephemeral container that mounts the volume, the
// effective seLinuxOptions (a container's options replace the pod's as a
// whole). Containers with none contribute nothing.
func containerSELinuxOptions(pod *corev1.Pod, podVolume string) []*corev1.SELinuxOptions {
	var podOpts *corev1.SELinuxOptions
	if pod.Spec.SecurityContext != nil {
		podOpts = pod.Spec.SecurityContext.SELinuxOptions
	}
	var out []*corev1.SELinuxOptions
	visit := func(mounts []corev1.VolumeMount, sc *corev1.SecurityContext) {
		if !slices.ContainsFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == podVolume }) {
			return
		}
		opts := podOpts
		if sc != nil && sc.SELinuxOptions != nil {
			opts = sc.SELinuxOptions
		}
		if opts != nil {
			out = append(out, opts)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		visit(c.VolumeMounts, c.SecurityContext)
	}
	for _, c := range pod.Spec.Containers {
		visit(c.VolumeMounts, c.SecurityContext)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.VolumeMounts, c.SecurityContext)
	}
	return out
}

// volumeSupportsSELinuxMount is util.VolumeSupportsSELinuxMount: PVs only;
// any access mode with the SELinuxMount gate (in 1.30 and 1.31 the PV still
// needed a single access mode), else exactly [ReadWriteOncePod].
func (k *Kubelet) volumeSupportsSELinuxMount(v *volumeSpec) bool {
	if !k.release.Enabled(release.SELinuxMountReadWriteOncePod) || v.PV == nil {
		return false
	}
	modes := v.PV.Spec.AccessModes
	if k.release.Enabled(release.SELinuxMount) {
		return k.release.SELinuxMountAnyAccessMode() || len(modes) == 1
	}
	return len(modes) == 1 && modes[0] == corev1.ReadWriteOncePod
}

// pluginSupportsSELinuxMount is csiPlugin.SupportsSELinuxContextMount: the
// CSIDriver's seLinuxMount.
func (k *csiPlugin) pluginSupportsSELinuxMount(driver string) bool {
	if !k.release.Enabled(release.SELinuxMountReadWriteOncePod) {
		return false
	}
	d, ok := k.cluster.CSIDriver(driver)
	return ok && d.Spec.SELinuxMount != nil && *d.Spec.SELinuxMount
}

// seLinuxVolume is the label the desired state of the world keeps per
// volume: the first pod's label, shared by every pod of the volume.
type seLinuxVolume struct {
	effective string // the mount label (empty: no -o context)
	original  string // the pod's label before the volume's support was considered
}

// mountSELinuxLabel is GetMountSELinuxLabel and desiredStateOfWorld
// .AddPodToVolume: the label to mount the volume with for this pod, or an
// error the kubelet reports for the pod.
func (k *Kubelet) mountSELinuxLabel(pod *corev1.Pod, v *volumeSpec) (string, error) {
	unique := v.uniqueName(string(pod.UID))
	label, pluginSupports, err := k.podSELinuxLabel(pod, v)
	if err != nil {
		return "", err
	}
	existing, known := k.state.seLinuxVolume(unique, func() *seLinuxVolume {
		effective := label
		if !k.volumeSupportsSELinuxMount(v) {
			effective = ""
		}
		return &seLinuxVolume{effective: effective, original: label}
	})
	if !known {
		return existing.effective, nil
	}
	if pluginSupports && label != existing.original && k.volumeSupportsSELinuxMount(v) {
		return "", fmt.Errorf("conflicting SELinux labels of volume %s: %q and %q", v.SpecName, existing.original, label)
	}
	return existing.effective, nil
}

// podSELinuxLabel is GetMountSELinuxLabel for one pod and volume.
func (k *Kubelet) podSELinuxLabel(pod *corev1.Pod, v *volumeSpec) (label string, pluginSupports bool, err error) {
	if !k.release.Enabled(release.SELinuxMountReadWriteOncePod) || !k.selinux.Enabled {
		return "", false, nil
	}
	pluginSupports = k.pluginSupportsSELinuxMount(v.Driver)
	var labels []string
	for _, opts := range containerSELinuxOptions(pod, v.PodVolume) {
		if l := k.selinux.FileLabel(opts); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	if len(labels) > 1 {
		if k.volumeSupportsSELinuxMount(v) {
			return "", false, fmt.Errorf("multiple SELinux labels found: %s", strings.Join(labels, ","))
		}
		return "", false, nil
	}
	if len(labels) == 0 {
		return "", pluginSupports, nil
	}
	label = labels[0]
	if k.release.Enabled(release.SELinuxChangePolicy) && pod.Spec.SecurityContext != nil &&
		pod.Spec.SecurityContext.SELinuxChangePolicy != nil &&
		*pod.Spec.SecurityContext.SELinuxChangePolicy == corev1.SELinuxChangePolicyRecursive {
		label = ""
	}
	if !pluginSupports {
		label = ""
	}
	return label, pluginSupports, nil
}

// addSELinuxMountOption is util.AddSELinuxMountOption: context="<label>"
// with Go quoting, after the PV's mount options.
func addSELinuxMountOption(options []string, label string) []string {
	return append(slices.Clone(options), fmt.Sprintf("context=%q", label))
}

// checkSELinuxContext warns when the driver did not mount the target with
// the context it was sent: a silent failure the field knows well, since a
// bind mount or a FUSE mount drops the option without an error.
func (k *csiPlugin) checkSELinuxContext(ctx context.Context, target, label string) {
	if k.cfg.DryRun {
		return
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(target))
	if err != nil || len(mounts) == 0 {
		k.trace.Warn(ctx, "SELinux: cannot check the context of "+target+": not a mount point")
		return
	}
	want := "context=" + strconv.Quote(label)
	m := mounts[len(mounts)-1]
	for _, opt := range strings.Split(m.Options+","+m.VFSOptions, ",") {
		if opt == want || opt == "context="+label {
			k.trace.Note(ctx, true, "SELinux: target mounted with "+want)
			return
		}
	}
	k.trace.Warn(ctx, fmt.Sprintf("SELinux: the driver was sent %s but the target is mounted without it (options %q, %q): the pod would see the wrong label", want, m.Options, m.VFSOptions))
}

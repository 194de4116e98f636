package csi

// selinux.go follows pkg/volume/util/selinux.go and csi_mounter.go's
// SELinux mount support.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

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

// ContainerSELinuxOptions is util.GetPodVolumeNames' collection: for every
// init, regular and ephemeral container that mounts the volume, the
// effective seLinuxOptions (a container's options replace the pod's as a
// whole). Containers with none contribute nothing.
func ContainerSELinuxOptions(pod *corev1.Pod, podVolume string) []*corev1.SELinuxOptions {
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

// SELinuxVolume is the label the desired state of the world keeps per
// volume: the first pod's label, shared by every pod of the volume.
type SELinuxVolume struct {
	Effective string // the mount label (empty: no -o context)
	Original  string // the pod's label before the volume's support was considered
}

// AddSELinuxMountOption is util.AddSELinuxMountOption: context="<label>"
// with Go quoting, after the PV's mount options.
func AddSELinuxMountOption(options []string, label string) []string {
	return append(slices.Clone(options), fmt.Sprintf("context=%q", label))
}

// Package kubeletdiff is the differential test of csi-kubelet-sim: the
// kubelet's own CSI volume code (k8s.io/kubernetes/pkg/volume/csi and the
// volume manager that drives it) and the built simulator, each against a
// recording CSI driver, compared request for request. Everything is in the
// tests; see README.md.
package kubeletdiff

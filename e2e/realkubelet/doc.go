// Package realkubelet runs a whole, unmodified kubelet of a Kubernetes
// release (with its kube-apiserver, etcd and Kubernetes' fake container
// runtime) against a recording CSI driver, and compares what the driver was
// sent with what `csi-kubelet-sim run` sends for the same objects. The code
// is all in the test (TestRealKubelet); see README.md.
package realkubelet

// Package controlplane answers what runs around the simulated node with
// --apiserver: a real kube-apiserver on etcd (cluster/) started under the
// session's locked root dir, the input created through its API and read
// back (server-set UIDs and defaults), the Node registered, the driver's
// kubeconfig written and the driver's socket waited for; during the run,
// the driver's requests from the audit log in the trace and the kubelet's
// and the controllers' API writes hooked into the node's plan; for
// `conformance --apiserver`, the same control plane once around every
// scenario (Scenarios); for `cleanup`, what a killed run's control plane
// left. It knows the session only through Config and Run, and tells the
// user nothing itself: the session announces what it returns.
package controlplane

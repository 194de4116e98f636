// Package session is one session of the simulated kubelet with what
// surrounds the node: the input (manifests, or a pod of a live cluster),
// admission, the control plane when asked (cluster/), the sidecars
// (sidecars/), the root dir's lock and journal, the node itself
// (node.New, Kubelet.Run), the report's recording and the clean-up.
//
// Each command's options (RunOptions, PlanOptions, LoadOptions,
// ConformanceOptions, ValidateOptions, CleanupOptions) complete, validate
// and run, as kubectl's do; the command line only fills them from flags
// and gives them a printer (an Observer). A Go program calls RunPod or
// Conformance, which return what happened as data.
package session

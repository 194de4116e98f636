// Package session answers how one session of the simulated kubelet is
// run, from options to what happened: the input (manifests, or a pod of a
// live cluster: session/replay), its admission (session/admission), the
// control plane when asked (session/controlplane), the sidecars
// (sidecars/), the root dir's lock and journal, the node itself (node.New,
// Kubelet.Run), the report's recording and the clean-up.
//
// Each command's options (RunOptions, PlanOptions, LoadOptions,
// ConformanceOptions, CleanupOptions) complete, validate and run, as
// kubectl's do; the command line only fills them from flags and gives
// them a printer (an Observer, a ConformanceObserver). The engine writes
// nothing of the user's itself: what it would tell (the trace, warnings,
// notes, the summary) goes to the observer as data. A Go program calls
// RunPod or Conformance, which return what happened as data.
//
// Below it, besides those: session/exitcode (the exit codes),
// session/junit (run --junit's document), session/rootdirs (which root
// dir a session may use, and its lock), session/scenarioinput (what
// conformance's volumes follow in the input). None of them imports
// session.
package session

package kubeletdiff

// The harness is one source tree for every release; where the kubelet's Go
// API changed between 1.30 and 1.38, a small function hides it, defined once
// per side of the release that changed it, in adapt_before1_XX_test.go
// (build tag before1_XX: the code is of a release older than 1.XX) and
// adapt_since1_XX_test.go (no such tag). The Makefile passes before1_XX for
// every XX above the release's minor (v1.33.13: before1_34 ... before1_40),
// so that a plain `go test` builds against go.mod, the newest release.
//
//   before1_31  component-base has no DefaultKubeBinaryVersion; grpc (1.58)
//               has no NewClient; GetPodVolumeNames returns sets.String; the
//               populator takes keepTerminatedPodVolumes
//   before1_32  the populator's Run takes a stop channel; GetPodVolumeNames
//               has no SELinux switch
//   before1_34  the populator takes the container runtime; the reconciler's
//               Run has no context; the fake host's GetMounter takes a
//               plugin name
//   before1_35  no DesiredStateOfWorld.GetVolumeNamesForPod; a mounted
//               volume has one OuterVolumeSpecName
//   before1_36  csimigration.NewPluginManager takes the feature gate
//   before1_38  the actual state and the reconciler take no checkpoint of
//               actuated pod volumes (allocation/state); the reconciler's
//               Run takes a stop channel beside its context (1.34 to 1.37)

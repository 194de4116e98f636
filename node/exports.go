package node

// This file is the package's front door for the CLI and the engine: the
// names they use from node, kept here where the code behind them moved into
// node's subpackages, so that `node.X` keeps its name and its meaning.

import (
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// The release and its gates (node/release).
type (
	Release = release.Release
	Version = release.Version
)

var (
	DefaultRelease    = release.DefaultRelease
	DefaultVersion    = release.DefaultVersion
	MaxMinor          = release.MaxMinor
	NewRelease        = release.NewRelease
	ParseVersion      = release.ParseVersion
	Releases          = release.Releases
	SupportedReleases = release.SupportedReleases
)

// The root dir: its lock, its journals, its names, the file system under it
// (node/rootdir).
type (
	RootHeldError = rootdir.RootHeldError
	RootLock      = rootdir.RootLock
	SymlinkError  = rootdir.SymlinkError
)

var (
	AttachmentName   = rootdir.AttachmentName
	CheckRoot        = rootdir.CheckRoot
	HeldAbove        = rootdir.HeldAbove
	HeldRoots        = rootdir.HeldRoots
	IsForeignFile    = rootdir.IsForeignFile
	IsInTheWay       = rootdir.IsInTheWay
	IsSymlinkRefused = rootdir.IsSymlinkRefused
	Journals         = rootdir.Journals
	LiveJournalOwner = rootdir.LiveJournalOwner
	LockRoot         = rootdir.LockRoot
	OpenSimDir       = rootdir.OpenSimDir
	RemoveInSimDir   = rootdir.RemoveInSimDir
	RemoveSimDir     = rootdir.RemoveSimDir
	UniqueVolumeName = rootdir.UniqueVolumeName
)

// The CSI volume plugin: registration, SELinux, the token getter (node/csi).
type (
	Registration      = csiplugin.Registration
	RegistrationError = csiplugin.RegistrationError
	SELinux           = csiplugin.SELinux
	TokenIssuer       = csiplugin.TokenIssuer
	TokenOptions      = csiplugin.TokenOptions
	TokenSource       = csiplugin.TokenSource
)

var NewTokenSource = csiplugin.NewTokenSource

// The bounds of the kubelet's retries (node/operationexecutor).
type Retry = operationexecutor.Retry

// What the volume manager reports: a pod's and a volume's results, the
// running pods' schedule and report, what a run left behind
// (node/volumemanager).
type (
	Leftovers       = volumemanager.Leftovers
	PodResult       = volumemanager.PodResult
	RunningReport   = volumemanager.RunningReport
	RunningSchedule = volumemanager.RunningSchedule
	VolumeResult    = volumemanager.VolumeResult
)

const OwnerDriver = volumemanager.OwnerDriver

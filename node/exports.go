package node

// This file is the package's front door for the CLI and the engine: the
// names they use from node, kept here where the code behind them moved into
// node's subpackages, so that `node.X` keeps its name and its meaning.

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
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

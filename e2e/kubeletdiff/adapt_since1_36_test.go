//go:build !before1_36

package kubeletdiff

import "k8s.io/kubernetes/pkg/volume/csimigration"

func newPluginManager(m csimigration.PluginNameMapper) csimigration.PluginManager {
	return csimigration.NewPluginManager(m)
}

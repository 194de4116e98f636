//go:build before1_36

package kubeletdiff

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"k8s.io/kubernetes/pkg/volume/csimigration"
)

func newPluginManager(m csimigration.PluginNameMapper) csimigration.PluginManager {
	return csimigration.NewPluginManager(m, utilfeature.DefaultFeatureGate)
}

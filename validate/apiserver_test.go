package validate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// --apiserver judges at the helper's release: the two constants agree.
func TestAPIServerMinorIsTheHelpers(t *testing.T) {
	if want := fmt.Sprintf("v1.%d.", apiServerMinor); !strings.HasPrefix(cluster.KubeVersion, want) {
		t.Errorf("apiServerMinor %d, helper %s", apiServerMinor, cluster.KubeVersion)
	}
}

// rawObjectName names objects as the simulator does, when the API server
// could not map the kind.
func TestRawObjectName(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"Pod","metadata":{"name":"p"}}`:                          "Pod default/p",
		`{"kind":"Foo","metadata":{"name":"f","namespace":"x"}}`:          "Foo x/f",
		`{"kind":"CSIDriver","metadata":{"name":"d","namespace":"junk"}}`: "CSIDriver d",
	} {
		if got := rawObjectName([]byte(in)); got != want {
			t.Errorf("rawObjectName(%s) = %q, want %q", in, got, want)
		}
	}
}

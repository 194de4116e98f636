package kubeletdiff

import (
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
)

// Case is one case of the table (package difftable, which the whole-kubelet
// test runs too).
type Case = difftable.Case

const samplesDir = "../../fixtures/samples"

// cases: every sample, then the table.
func cases(t *testing.T) []Case {
	out, err := difftable.Cases(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// caseFiles writes the case's manifests under dir.
func caseFiles(t *testing.T, c Case, dir string) []string {
	files, err := c.Files(samplesDir, dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

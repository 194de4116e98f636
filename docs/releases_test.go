package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// The documents name the releases the simulator reproduces as node does
// (node.Releases, from node/releases.txt): adding a release (CONTRIBUTING.md, "Adding a release")
// fails here until the range, and the gate table's columns, name it.
func TestReleasesDocumented(t *testing.T) {
	rangeText := "1.30 to " + node.Releases()[len(node.Releases())-1].String()
	rules := readFile(t, rulesFile)
	flat := strings.Join(strings.Fields(rules), " ")
	for _, want := range []string{"reproduces kubelet " + rangeText, "reproduces kubelets " + rangeText} {
		if !strings.Contains(flat, want) {
			t.Errorf("docs/kubelet.md does not say %q", want)
		}
	}
	readme := strings.Join(strings.Fields(readFile(t, "../README.md")), " ")
	if want := "`--kubelet-version` (" + rangeText + ")"; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q", want)
	}
	_, table, _ := strings.Cut(rules, "### 19.1 ")
	header := regexp.MustCompile(`(?m)^\| gate \|(.*)\|$`).FindStringSubmatch(table)
	if header == nil {
		t.Fatal("docs/kubelet.md has no gate table (§19.1)")
	}
	var cols, want []string
	for _, c := range strings.Split(header[1], "|") {
		cols = append(cols, strings.TrimSpace(c))
	}
	for _, v := range node.Releases() {
		want = append(want, v.String())
	}
	if strings.Join(cols, " ") != strings.Join(want, " ") {
		t.Errorf("gate table columns %q, want one per release %q", cols, want)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

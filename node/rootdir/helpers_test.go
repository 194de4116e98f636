package rootdir

import (
	"os"
	"testing"
)

// fuzzRoot is the kubelet's usual root dir, the one the path tests build under.
const fuzzRoot = "/var/lib/kubelet"

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestDumpGoroutines: SIGQUIT's dump holds every goroutine's stack, this
// test's included.
func TestDumpGoroutines(t *testing.T) {
	var b strings.Builder
	dumpGoroutines(&b)
	if !strings.Contains(b.String(), "goroutine ") || !strings.Contains(b.String(), "TestDumpGoroutines") {
		t.Errorf("dump lacks the goroutines:\n%.500s", b.String())
	}
}

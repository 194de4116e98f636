package main

import (
	"os"
	"runtime/debug"
)

// oneShotGCPercent is the garbage collector's target for the one-shot
// commands (run, plan, validate, ...). They allocate a few MB and exit
// within tens of milliseconds; at Go's default (GOGC=100, a first heap goal
// of 4 MB) they collected once or twice for nothing that mattered (about 3
// ms of CPU of a `run`). At 400 the heap may grow to five times what is
// live before a collection, so a one-shot run seldom collects at all; its
// peak memory is what it allocates (a few MB more). `load`, which runs long
// with many pods, goes back to the default (defaultGC).
const oneShotGCPercent = 400

// oneShotGC sets that target, unless the user chose one with GOGC.
func oneShotGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(oneShotGCPercent)
	}
}

// defaultGC restores Go's default target for a long-running command,
// unless the user chose one with GOGC.
func defaultGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}

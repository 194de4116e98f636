package session

import (
	"os"
	"runtime/debug"
)

// oneShotGCPercent is the garbage collector's target for the one-shot
// commands (run, plan, validate, ...). They allocate a few MB and exit
// within tens of milliseconds; at Go's default (GOGC=100, a first heap goal
// of 4 MB) a `run` of one staged pod collected once for nothing that
// mattered (about 3 ms of CPU with the collector's start-up). At 200 the
// first goal is 8 MB and that run does not collect at all (at 150 neither,
// with less room). The cost is the heap growing to three times what is live
// between collections: `plan` of 1000 staged pods peaked at 60 MB instead
// of 50 MB (400: 81 MB). `load`, which runs long with many pods, goes back
// to the default (defaultGC).
const oneShotGCPercent = 200

// oneShotGC sets that target, unless the user chose one with GOGC.
func OneShotGC() {
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

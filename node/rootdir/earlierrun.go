package rootdir

// earlierrun.go: a kubelet that restarts reconstructs an earlier run's
// volumes first (reconstruct.go); the simulator asks the user to `cleanup`.

import (
	"errors"
	"fmt"
)

// EarlierRunError is a root dir that holds the journal of a run that did
// not finish its teardown.
type EarlierRunError struct {
	Root     string
	Journals []string
	// Live is the journals' writer when it still runs (it holds its
	// journal's flock, though the root dir's lock file was removed under
	// it): it is not to be cleaned up under it.
	Live *LockOwner
}

func (e *EarlierRunError) Error() string {
	if e.Live != nil {
		return fmt.Sprintf("root dir %s is in use by a running csi-kubelet-sim, %s (its journal is in %s/%s): wait for it to finish or stop it; do not run `cleanup` on a live run", e.Root, e.Live, e.Root, JournalDir)
	}
	return fmt.Sprintf("root dir %s holds volumes of an earlier run that did not finish (%d journal(s) in %s/%s; the run that wrote them is gone); finish it with `csi-kubelet-sim cleanup --root-dir %s --endpoint <the driver's socket>` before running here again", e.Root, len(e.Journals), e.Root, JournalDir, e.Root)
}

// CheckRoot refuses a root dir that holds an earlier run's volumes: a
// kubelet that restarts reconstructs them first, and so must the user,
// through the driver, with `cleanup`. A journal whose writer still runs
// is named as a live run instead.
func CheckRoot(root string) error {
	js, err := Journals(root)
	if err != nil {
		return err
	}
	if len(js) == 0 {
		return nil
	}
	e := &EarlierRunError{Root: root, Journals: js}
	if o, ok := LiveJournalOwner(js); ok {
		e.Live = &o
	}
	return e
}

// LiveJournalOwner is the writer of one of the journals when it is still
// running: it holds the journal's flock (not this process). The PID in a
// journal's header alone says nothing: it may be reused, or a zombie's.
func LiveJournalOwner(journals []string) (LockOwner, bool) {
	for _, j := range journals {
		if o, ok := JournalWriter(j); ok {
			return o, true
		}
	}
	return LockOwner{}, false
}

// IsInTheWay tells whether err is a path of someone else's that the run
// needed.
func IsInTheWay(err error) bool {
	var e *InTheWayError
	return errors.As(err, &e)
}

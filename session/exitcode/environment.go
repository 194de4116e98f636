package exitcode

import (
	"errors"
	"syscall"
)

// environmentErrnos are the host's answers that say nothing about the
// input or the driver: a full or read-only file system, an I/O error, no
// memory or descriptors left. A run that meets one exits 3 (environment).
var environmentErrnos = []syscall.Errno{
	syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO,
	syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS,
}

// IsEnvironment tells whether err comes from the machine the run is on
// rather than from the input (2) or the driver (1).
func IsEnvironment(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	for _, e := range environmentErrnos {
		if errno == e {
			return true
		}
	}
	return false
}

// Package tokencmd is the work of the tokens subcommands (keygen, mint,
// jwks, serve, verify, claims): service-account tokens as the API server
// issues, publishes and checks them.
package tokencmd

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// loadPublicKeys reads every key of each file; errors are usage errors
// naming the flag and the file.
func loadPublicKeys(flag string, files []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range files {
		k, err := tokens.LoadPublicKeys(f)
		if err != nil {
			return nil, session.WithCode(session.ExitUsage, fileError(flag, err))
		}
		keys = append(keys, k...)
	}
	return keys, nil
}

// fileError words a key file error as "FLAG FILE: reason". The tokens
// loaders start their messages with the file; *fs.PathError is reworded.
func fileError(flag string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", flag, pe.Path, pe.Err)
	}
	return fmt.Errorf("%s %w", flag, err)
}

// optionalInt64 is an int64 flag that can be left unset (nil).
type optionalInt64 struct{ v *int64 }

func (f *optionalInt64) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f *optionalInt64) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want an integer")
	}
	f.v = &n
	return nil
}

func (f *optionalInt64) Type() string { return "int" }

// timeFlag is an RFC 3339 time; zero when unset.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	f.t = t
	return nil
}

func (f *timeFlag) Type() string { return "time" }

package main

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

const tokensLong = `Service-account tokens as the kube-apiserver issues, publishes and checks
them: the keys (keygen), a pod-bound token for a CSIDriver tokenRequests entry
(mint), the JWKS (jwks), the OIDC discovery endpoints (serve), a token's
signature and claims (verify), and the claims of the tokens a run handed the
driver, from its -o json output (claims). run uses the same issuer for the
tokens it hands the driver.`

const tokensExample = `  csi-kubelet-sim tokens keygen --private-key sa.key --public-key sa.pub
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --audience vault \
    | csi-kubelet-sim tokens verify --key sa.pub --audience vault -`

// newTokensCommand is the `tokens` group; it runs nothing itself.
func newTokensCommand(s streams) *cobra.Command {
	c := &cobra.Command{
		Use:     "tokens keygen|mint|jwks|serve|verify|claims",
		Short:   "Service-account tokens as the API server issues, publishes and checks them",
		Long:    tokensLong,
		Example: tokensExample,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] != "help" {
				return withCode(exitUsage, fmt.Errorf("tokens: unknown command %q; 'csi-kubelet-sim tokens --help' lists them", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return c.Help()
			}
			fmt.Fprint(s.Err, c.UsageString())
			return withCode(exitUsage, errors.New("tokens: a command is needed"))
		},
	}
	c.AddCommand(
		newTokensKeygenCommand(s),
		newTokensMintCommand(s),
		newTokensJWKSCommand(s),
		newTokensServeCommand(s),
		newTokensVerifyCommand(s),
		newTokensClaimsCommand(s),
	)
	return c
}

// loadPublicKeys reads every key of each file; errors are usage errors
// naming the flag and the file.
func loadPublicKeys(flag string, files []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range files {
		k, err := tokens.LoadPublicKeys(f)
		if err != nil {
			return nil, withCode(exitUsage, fileError(flag, err))
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

package main

import (
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// The verdicts of the API server and of the tool are told apart when one
// accepts what the other refuses, or when both refuse with other messages.
func TestDisagreement(t *testing.T) {
	msg := `spec.fsGroupPolicy: Unsupported value: "Bad": supported values: "File"`
	cases := []struct {
		name string
		v    cluster.Verdict
		tool []string
		want string // "" agree
	}{
		{"both accept", cluster.Verdict{Accepted: true}, nil, ""},
		{"both refuse alike", cluster.Verdict{Causes: []string{msg}, Message: "invalid"}, []string{msg}, ""},
		{"server accepts", cluster.Verdict{Accepted: true}, []string{msg}, "the API server accepts it, csi-kubelet-sim refuses it"},
		{"tool accepts", cluster.Verdict{Message: "invalid: x"}, nil, "csi-kubelet-sim accepts it, the API server refuses it: invalid: x"},
		{"other messages", cluster.Verdict{Causes: []string{"spec.x: Required value"}, Message: "invalid"}, []string{msg}, "both refuse it, with other messages"},
	}
	for _, tc := range cases {
		got := disagreement(tc.v, tc.tool)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: disagreement = %q, want %q", tc.name, got, tc.want)
		}
	}
}

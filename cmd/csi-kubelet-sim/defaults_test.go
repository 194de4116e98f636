package main

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// The Go entry points' options start where the commands' flags do: a
// flag default changed in one place and not the other fails here.
func TestGoOptionsHaveTheFlagDefaults(t *testing.T) {
	t.Setenv("CSI_ENDPOINT", "")
	run := session.NewRunOptions("")
	want := *run
	addRunFlags(run, pflag.NewFlagSet("run", pflag.ContinueOnError))
	if !reflect.DeepEqual(*run, want) {
		t.Errorf("run: the flags' defaults\n%+v\nNewRunOptions\n%+v", *run, want)
	}
	conf := session.NewConformanceOptions("")
	wantConf := *conf
	addConformanceFlags(conf, pflag.NewFlagSet("conformance", pflag.ContinueOnError))
	if !reflect.DeepEqual(*conf, wantConf) {
		t.Errorf("conformance: the flags' defaults\n%+v\nNewConformanceOptions\n%+v", *conf, wantConf)
	}
}

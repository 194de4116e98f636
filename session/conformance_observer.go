package session

import (
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// ConformanceObserver sees a conformance run as it goes: the header once
// the driver is known, each scenario as it starts and ends, the report.
// The command's printer is one (printers.Conformance); a Go caller may
// leave it nil.
type ConformanceObserver interface {
	Notices
	Header(ConformanceHeader)
	// Announce is a line on the run's API server (--apiserver), after the
	// header.
	Announce(msg string)
	// LiveTrace gives each scenario's trace a sink as it runs (-v); nil:
	// none (the scenarios may then run side by side).
	LiveTrace() func(scenario string) csiclient.Sink
	Start(conformance.Scenario)
	Result(conformance.Result)
	// Summary ends the run; written names the files it wrote.
	Summary(rep *conformance.Report, written ConformanceFiles)
}

// ConformanceFiles are the files a conformance run wrote: empty, one not
// asked for or not written.
type ConformanceFiles struct {
	JUnit  string // --junit
	Report string // --report
}

// ConformanceHeader is what a conformance run knows before its first
// scenario.
type ConformanceHeader struct {
	Driver           *conformance.DriverInfo
	CSIDriver        *storagev1.CSIDriver // nil: none given
	CSIDriverSummary string               // its fields that matter, in a line
	Files            []string             // where it came from
	Endpoint         csiclient.Endpoint
	Release          node.Release
	FeatureGates     string
	NodeName         string
	TestDriverFile   string // --testdriver; empty: none
	TestDriverName   string // its DriverInfo.Name
	RootDir          string
	OwnedRoot        bool // made for the run, removed afterwards
	Host             conformance.Host
	// Redactor keeps the run's secrets out of what quotes the driver.
	Redactor csiclient.Redactor
	// Rerun is the command line that runs one scenario again.
	Rerun func(name string) string
}

// noConformanceObserver is the observer of a Go caller that gave none.
type noConformanceObserver struct{ noNotices }

func (noConformanceObserver) Announce(string)                               {}
func (noConformanceObserver) LiveTrace() func(string) csiclient.Sink        { return nil }
func (noConformanceObserver) Header(ConformanceHeader)                      {}
func (noConformanceObserver) Start(conformance.Scenario)                    {}
func (noConformanceObserver) Result(conformance.Result)                     {}
func (noConformanceObserver) Summary(*conformance.Report, ConformanceFiles) {}

package conformance

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// The reader below is written from the JUnit XML schema CI systems read
// (testsuites > testsuite > testcase, with failure/skipped children), not
// from the writer's types, so that it checks the document and not the
// writer against itself.
type readSuites struct {
	XMLName xml.Name    `xml:"testsuites"`
	Tests   string      `xml:"tests,attr"`
	Suites  []readSuite `xml:"testsuite"`
}

type readSuite struct {
	Name     string `xml:"name,attr"`
	Tests    string `xml:"tests,attr"`
	Failures string `xml:"failures,attr"`
	Errors   string `xml:"errors,attr"`
	Skipped  string `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	Props    []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []readCase `xml:"testcase"`
}

type readCase struct {
	Name      string `xml:"name,attr"`
	ClassName string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Error     *struct{} `xml:"error"`
	SystemOut string    `xml:"system-out"`
}

func testReport() *Report {
	return &Report{
		Driver:   &DriverInfo{Name: "drv.example.com", VendorVersion: "1.2.3", Node: []csi.NodeServiceCapability_RPC_Type{stage}},
		Volume:   &Volume{Handle: "vol-1", Created: true, Name: "csi-kubelet-sim-conformance-x"},
		Started:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Duration: 1500 * time.Millisecond,
		Results: []Result{
			{Name: "registration/node-info", Status: Pass, Duration: 2 * time.Millisecond, Notes: []string{"node_id \"n\""}},
			{Name: "republish/same-mount", Status: Fail, Duration: 30 * time.Millisecond,
				Message: "NodePublishVolume (republish) unmounted and remounted the target: mount ID 123 -> 456; the kubelet republishes over a live mount and the pod keeps the old one (docs/kubelet.md §5)\nsecond <failure> & \"quoted\""},
			{Name: "selinux/context-mount", Status: Skip, Message: "this host has no SELinux (/sys/fs/selinux absent)"},
			{Name: "timing/half-timeout", Status: Pass, Duration: time.Millisecond},
		},
	}
}

func TestJUnitParses(t *testing.T) {
	rep := testReport()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration:\n%s", buf.String())
	}
	var doc readSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d test suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "csi-kubelet-sim conformance" {
		t.Errorf("suite name %q", s.Name)
	}
	if s.Tests != "4" || s.Failures != "1" || s.Skipped != "1" || s.Errors != "0" || doc.Tests != "4" {
		t.Errorf("counts: tests %s (root %s) failures %s skipped %s errors %s; want 4 1 1 0", s.Tests, doc.Tests, s.Failures, s.Skipped, s.Errors)
	}
	if sec, err := strconv.ParseFloat(s.Time, 64); err != nil || sec != 1.5 {
		t.Errorf("suite time %q, want 1.5", s.Time)
	}
	if len(s.Cases) != len(rep.Results) {
		t.Fatalf("%d test cases, want one per scenario (%d)", len(s.Cases), len(rep.Results))
	}
	for i, c := range s.Cases {
		res := rep.Results[i]
		if c.Name != res.Name {
			t.Errorf("case %d is %q, want %q", i, c.Name, res.Name)
		}
		if _, err := strconv.ParseFloat(c.Time, 64); err != nil {
			t.Errorf("%s: time %q: %v", c.Name, c.Time, err)
		}
		if c.Error != nil {
			t.Errorf("%s: has <error>", c.Name)
		}
		switch res.Status {
		case Pass:
			if c.Failure != nil || c.Skipped != nil {
				t.Errorf("%s passed but has failure %v / skipped %v", c.Name, c.Failure, c.Skipped)
			}
		case Fail:
			if c.Failure == nil {
				t.Fatalf("%s: no <failure>", c.Name)
			}
			first, _, _ := strings.Cut(res.Message, "\n")
			if c.Failure.Message != first || c.Failure.Body != res.Message {
				t.Errorf("%s: failure message %q body %q; want %q and the whole message", c.Name, c.Failure.Message, c.Failure.Body, first)
			}
		case Skip:
			if c.Skipped == nil || c.Skipped.Message != res.Message {
				t.Errorf("%s: skipped %+v, want reason %q", c.Name, c.Skipped, res.Message)
			}
		}
	}
	if s.Cases[0].ClassName != "csi-kubelet-sim.conformance.registration" || s.Cases[0].SystemOut != `node_id "n"` {
		t.Errorf("case 0: classname %q, system-out %q", s.Cases[0].ClassName, s.Cases[0].SystemOut)
	}
	props := map[string]string{}
	for _, p := range s.Props {
		props[p.Name] = p.Value
	}
	if props["driver"] != "drv.example.com" || props["node_capabilities"] != "STAGE_UNSTAGE_VOLUME" || !strings.Contains(props["volume"], "CreateVolume") {
		t.Errorf("properties %v", props)
	}
}

// With no scenario selected the document is still valid JUnit.
func TestJUnitEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, &Report{Driver: &DriverInfo{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	var doc readSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Tests != "0" || len(doc.Suites[0].Cases) != 0 {
		t.Errorf("got %+v", doc)
	}
}

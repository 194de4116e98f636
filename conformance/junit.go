package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// SuiteName is the name of the JUnit test suite.
const SuiteName = "csi-kubelet-sim conformance"

// JUnit XML, in the shape Jenkins, GitLab, GitHub Actions reporters and
// Prow read (the de-facto schema of Ant's JUnit task): one <testcase> per
// scenario, <failure> with a message, <skipped> with the reason.

// JUnitTestSuites is the document root.
type JUnitTestSuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one suite: the conformance run.
type JUnitTestSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	TestCases  []JUnitTestCase `xml:"testcase"`
}

// JUnitProperty is a name and a value of the suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitTestCase is one scenario.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitFailure is a failed scenario: the message attribute is its first
// failure, the text all of them.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped is a skipped scenario and why.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.6f", d.Seconds()) }

// JUnit turns a report into JUnit XML structs.
func JUnit(r *Report) JUnitTestSuites {
	pass, fail, skip := r.Counts()
	suite := JUnitTestSuite{
		Name:     SuiteName,
		Tests:    pass + fail + skip,
		Failures: fail,
		Skipped:  skip,
		Time:     seconds(r.Duration),
	}
	if !r.Started.IsZero() {
		suite.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	if d := r.Driver; d != nil {
		suite.Properties = append(suite.Properties,
			JUnitProperty{"driver", d.Name},
			JUnitProperty{"vendor_version", d.VendorVersion},
			JUnitProperty{"node_capabilities", strings.Join(d.NodeCapabilityNames(), ",")},
			JUnitProperty{"controller_capabilities", strings.Join(d.ControllerCapabilityNames(), ",")})
	}
	csiDriver := "none (the kubelet's behaviour without a CSIDriver object)"
	if r.CSIDriver != nil {
		csiDriver = r.CSIDriver.Name
	}
	suite.Properties = append(suite.Properties, JUnitProperty{"csidriver", csiDriver})
	if r.Volume != nil {
		suite.Properties = append(suite.Properties, JUnitProperty{"volume", r.Volume.Describe()})
		if r.Volume.Err != nil {
			suite.Properties = append(suite.Properties, JUnitProperty{"volume_error", r.Volume.Err.Error()})
		}
	}
	for _, res := range r.Results {
		tc := JUnitTestCase{
			Name:      res.Name,
			ClassName: "csi-kubelet-sim.conformance." + strings.SplitN(res.Name, "/", 2)[0],
			Time:      seconds(res.Duration),
			SystemOut: strings.Join(res.Notes, "\n"),
		}
		switch res.Status {
		case Fail:
			first, _, _ := strings.Cut(res.Message, "\n")
			tc.Failure = &JUnitFailure{Message: first, Type: "failure", Text: res.Message}
		case Skip:
			tc.Skipped = &JUnitSkipped{Message: res.Message}
		}
		suite.TestCases = append(suite.TestCases, tc)
	}
	return JUnitTestSuites{
		Name: SuiteName, Tests: suite.Tests, Failures: fail, Skipped: skip, Time: suite.Time,
		Suites: []JUnitTestSuite{suite},
	}
}

// Cleaned returns the document with clean applied to every text in it:
// names, messages, failure texts, system-out and property values, which
// quote the driver (csiclient.Redactor.TextLines: the run's secrets
// replaced, control characters escaped). XML 1.0 cannot hold most
// control characters at all; encoding/xml would turn them into U+FFFD.
func (d JUnitTestSuites) Cleaned(clean func(string) string) JUnitTestSuites {
	d.Name = clean(d.Name)
	suites := make([]JUnitTestSuite, len(d.Suites))
	for i, s := range d.Suites {
		s.Name = clean(s.Name)
		props := make([]JUnitProperty, len(s.Properties))
		for j, p := range s.Properties {
			props[j] = JUnitProperty{Name: clean(p.Name), Value: clean(p.Value)}
		}
		s.Properties = props
		cases := make([]JUnitTestCase, len(s.TestCases))
		for j, tc := range s.TestCases {
			cases[j] = tc.cleaned(clean)
		}
		s.TestCases = cases
		suites[i] = s
	}
	d.Suites = suites
	return d
}

func (tc JUnitTestCase) cleaned(clean func(string) string) JUnitTestCase {
	tc.Name, tc.ClassName, tc.SystemOut = clean(tc.Name), clean(tc.ClassName), clean(tc.SystemOut)
	if f := tc.Failure; f != nil {
		tc.Failure = &JUnitFailure{Message: clean(f.Message), Type: clean(f.Type), Text: clean(f.Text)}
	}
	if sk := tc.Skipped; sk != nil {
		tc.Skipped = &JUnitSkipped{Message: clean(sk.Message)}
	}
	return tc
}

// WriteJUnit writes the report as JUnit XML, cleaned with the run's
// redactor (Report.Redactor).
func WriteJUnit(w io.Writer, r *Report) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(r).Cleaned(r.Redactor.TextLines)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

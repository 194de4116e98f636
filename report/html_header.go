package report

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Header says what ran against what, and how it ended: the top of the
// page, so that a saved report still says which driver it is about.
type Header struct {
	Command       string // run, load, ...
	Driver        string // the name the driver registered
	DriverVersion string
	Endpoint      string
	Node          string
	Kubelet       string // the release and its gates, as the trace's first line has it
	Gates         string
	// Verdict is how the run ended: "OK", or the error.
	Verdict    string
	Failed     bool
	LeftBehind string // what the run left on the node ("nothing")
	// With --apiserver: who the driver was on the API server, and its
	// requests from the audit log ("15:04:05.000 get pods ns/name → 200").
	APIIdentity string
	APIRequests []string
}

// Cleaned returns the header with every text in it through red's Field
// (csiclient.Redactor.Text): the verdict quotes a driver's error, the
// version and name are the driver's, the requests the cluster's.
func (h Header) Cleaned(red csiclient.Redactor) Header {
	for _, f := range []*string{&h.Command, &h.Driver, &h.DriverVersion, &h.Endpoint, &h.Node, &h.Kubelet, &h.Gates, &h.Verdict, &h.LeftBehind, &h.APIIdentity} {
		*f = red.Text(*f)
	}
	reqs := make([]string, len(h.APIRequests))
	for i, r := range h.APIRequests {
		reqs[i] = red.Text(r)
	}
	h.APIRequests = reqs
	return h
}

// maxErrText bounds an error's text in a tooltip.
const maxErrText = 300

// errorText is a call's error for the page: the driver's message with the
// request's secret values, the run's (red) and any token replaced, cut
// and escaped (red.Short).
func errorText(c csiclient.Call, red csiclient.Redactor) string {
	if c.Err == nil {
		return ""
	}
	msg := c.Err.Error()
	if s, ok := c.Request.(interface{ GetSecrets() map[string]string }); ok {
		for _, v := range s.GetSecrets() {
			if len(v) >= 3 {
				msg = strings.ReplaceAll(msg, v, "***stripped***")
			}
		}
	}
	return red.Short(msg, maxErrText)
}

// methodColors colour the bars by method, so that a NodePublishVolume and
// a NodeGetCapabilities are told apart; errors are marked on top of it.
var methodColors = map[string]string{
	"GetPluginInfo":           "#8c8c8c",
	"GetPluginCapabilities":   "#a6a6a6",
	"Probe":                   "#bfbfbf",
	"NodeGetInfo":             "#6b6ecf",
	"NodeGetCapabilities":     "#b5cf6b",
	"NodeStageVolume":         "#3182bd",
	"NodePublishVolume":       "#31a354",
	"NodeUnpublishVolume":     "#fd8d3c",
	"NodeUnstageVolume":       "#9467bd",
	"NodeExpandVolume":        "#17becf",
	"NodeGetVolumeStats":      "#e7ba52",
	"ControllerPublishVolume": "#843c39",
	"CreateVolume":            "#637939",
	"DeleteVolume":            "#7b4173",
}

// methodColor is a method's colour; one the table lacks gets a stable one.
func methodColor(m string) string {
	if c, ok := methodColors[m]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(m))
	return fmt.Sprintf("hsl(%d, 45%%, 45%%)", h.Sum32()%360)
}

// plural is "1 call", "2 calls".
func plural(n any, word string) string {
	s := fmt.Sprint(n)
	if s == "1" {
		return s + " " + word
	}
	return s + " " + word + "s"
}

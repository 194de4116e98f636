package csiclient

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TextPrinter prints the trace for a person: one line per call, with the
// fields that matter on the lines below it, and the kubelet's own steps
// where they explain what happened.
type TextPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	redactor Redactor
	verbose  bool
	planned  bool
}

// NewTextPrinter writes to w. planned drops the durations (no driver ran).
// Everything it writes is scrubbed and escaped (Redactor.Writer); the
// driver's one-line fields are escaped whole, line breaks included.
func NewTextPrinter(w io.Writer, r Redactor, verbose, planned bool) *TextPrinter {
	return &TextPrinter{w: r.Writer(w), redactor: r, verbose: verbose, planned: planned}
}

// Call prints one call.
func (p *TextPrinter) Call(c Call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	result := "OK"
	if c.Err != nil {
		result = c.Code.String()
	}
	took := fmt.Sprintf("%8s", FormatDuration(c.Duration))
	if p.planned {
		took = ""
	}
	fmt.Fprintf(p.w, "%*d %-*s %-*s %-*s %-*s %s  %s\n", seqWidth, c.Seq, componentWidth, c.Labels.Component, operationWidth, c.Labels.Operation,
		methodWidth, c.Method, resultWidth, result, took, p.redactor.Text(headline(c)))
	if c.Err != nil {
		fmt.Fprintf(p.w, "      error: %s\n", p.redactor.Text(c.Err.Error()))
	}
	if c.TimedOut {
		fmt.Fprintf(p.w, "      timeout: the driver did not answer before the operation's timeout (--timeout); the kubelet gives up the call\n")
	}
	for _, f := range p.detailFields(c) {
		fmt.Fprintf(p.w, "      %-20s %s\n", f[0], p.redactor.Text(f[1]))
	}
}

// Step prints a kubelet step; verbose ones only with -v.
func (p *TextPrinter) Step(s Step) {
	if s.Verbose && !p.verbose {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := "·"
	if s.Warning {
		mark = "!"
	}
	who := s.Labels.Component
	if s.Labels.Operation != "" {
		who += " " + s.Labels.Operation
	}
	fmt.Fprintf(p.w, "    %s [%s] %s\n", mark, p.redactor.Text(strings.TrimSpace(who)), p.redactor.Text(s.Text))
}

// Printf prints a free line (headers, the summary). Its arguments other
// than numbers are escaped whole: a driver's name or error in the
// summary cannot start a line of its own.
func (p *TextPrinter) Printf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	args := make([]any, len(a))
	for i, x := range a {
		args[i] = p.printableArg(x)
	}
	fmt.Fprintf(p.w, format, args...)
}

func (p *TextPrinter) printableArg(x any) any {
	if x == nil {
		return x
	}
	switch reflect.TypeOf(x).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return x // numbers keep their verbs (%d, %6.1f); a Duration too
	}
	if s, ok := x.(string); ok {
		return p.redactor.Text(s)
	}
	return p.redactor.Text(fmt.Sprint(x))
}

// headline is the one thing a person wants to know about the call.
func headline(c Call) string {
	switch c.Method {
	case "GetPluginInfo":
		if c.Response != nil {
			r, _ := c.Response.(*csi.GetPluginInfoResponse)
			return fmt.Sprintf("name=%s vendor_version=%s", r.GetName(), r.GetVendorVersion())
		}
	case "NodeGetInfo":
		if c.Response != nil {
			r, _ := c.Response.(*csi.NodeGetInfoResponse)
			return fmt.Sprintf("node_id=%s max_volumes_per_node=%d topology=%v", r.GetNodeId(), r.GetMaxVolumesPerNode(), r.GetAccessibleTopology().GetSegments())
		}
	case "NodeGetCapabilities":
		s := ""
		if c.Labels.Asking != "" {
			s = "asks " + c.Labels.Asking
		}
		if c.Response != nil {
			s += " -> " + capabilityList(c)
		}
		return s
	}
	s := ""
	if c.Labels.Volume != "" {
		s = "volume " + c.Labels.Volume
	}
	if c.Labels.Pod != "" {
		s += " pod " + c.Labels.Pod
	}
	return strings.TrimSpace(s)
}

func capabilityList(c Call) string {
	var v struct {
		Capabilities []struct {
			RPC struct {
				Type any `json:"type"`
			} `json:"rpc"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(Redactor{}.JSON(c.Response), &v)
	var names []string
	for _, cp := range v.Capabilities {
		switch t := cp.RPC.Type.(type) {
		case string:
			names = append(names, t)
		case float64:
			// A value this CSI spec has no name for: VOLUME_CONDITION (4),
			// which spec 1.13 removed, or a newer one.
			if t == 4 {
				names = append(names, "VOLUME_CONDITION")
			} else {
				names = append(names, fmt.Sprintf("%v", t))
			}
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// detailFields are the request fields printed below a volume call, in the
// order of the CSI spec's message, redacted.
func (p *TextPrinter) detailFields(c Call) [][2]string {
	order := map[string][]string{
		"NodeStageVolume":     {"volume_id", "staging_target_path", "volume_capability", "publish_context", "volume_context", "secrets"},
		"NodePublishVolume":   {"volume_id", "staging_target_path", "target_path", "volume_capability", "readonly", "publish_context", "volume_context", "secrets"},
		"NodeUnpublishVolume": {"volume_id", "target_path"},
		"NodeUnstageVolume":   {"volume_id", "staging_target_path"},
		"NodeExpandVolume":    {"volume_id", "volume_path", "staging_target_path", "capacity_range", "volume_capability", "secrets"},
		"NodeGetVolumeStats":  {"volume_id", "volume_path", "staging_target_path"},
		// The sidecars' calls (package sidecars).
		"CreateVolume":              {"name", "capacity_range", "volume_capabilities", "parameters", "accessibility_requirements", "secrets"},
		"DeleteVolume":              {"volume_id", "secrets"},
		"ControllerPublishVolume":   {"volume_id", "node_id", "volume_capability", "readonly", "volume_context", "secrets"},
		"ControllerUnpublishVolume": {"volume_id", "node_id", "secrets"},
	}[c.Method]
	if order == nil || c.Request == nil {
		return nil
	}
	var v map[string]json.RawMessage
	_ = json.Unmarshal(p.redactor.JSON(c.Request), &v)
	var out [][2]string
	for _, k := range order {
		raw, ok := v[k]
		switch {
		case !ok && (k == "readonly"):
			out = append(out, [2]string{k, "false"})
		case !ok && (k == "secrets" || k == "volume_context" || k == "publish_context"):
			out = append(out, [2]string{k, "{}"})
		case !ok:
			continue
		default:
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out = append(out, [2]string{k, s})
			} else {
				out = append(out, [2]string{k, string(raw)})
			}
		}
	}
	return out
}

// JSONPrinter prints one JSON object per line: every call, every step, and
// the summary, told apart by "kind".
type JSONPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	redactor Redactor
}

// NewJSONPrinter writes JSON lines to w, each scrubbed and escaped
// (Redactor.JSONLine).
func NewJSONPrinter(w io.Writer, r Redactor) *JSONPrinter {
	return &JSONPrinter{w: w, redactor: r}
}

// write prints one object as a line.
func (p *JSONPrinter) write(v any) {
	line := p.redactor.JSONLine(v)
	_, _ = p.w.Write(append(line, '\n'))
}

// CallRecord is the JSON form of a call.
type CallRecord struct {
	SchemaVersion int             `json:"schemaVersion"`
	Kind          string          `json:"kind"`
	Seq           int             `json:"seq"`
	Time          time.Time       `json:"time"`
	Component     string          `json:"component"`
	Operation     string          `json:"operation"`
	Volume        string          `json:"volume,omitempty"`
	Pod           string          `json:"pod,omitempty"`
	Asking        string          `json:"asking,omitempty"`
	Method        string          `json:"method"`
	Request       json.RawMessage `json:"request"`
	Response      json.RawMessage `json:"response,omitempty"`
	Code          string          `json:"code"`
	Result        string          `json:"result"`
	Error         string          `json:"error,omitempty"`
	TimedOut      bool            `json:"timed_out,omitempty"`
	DurationMS    float64         `json:"duration_ms"`
}

// Record turns a call into its JSON form.
func (r Redactor) Record(c Call) CallRecord {
	rec := CallRecord{
		SchemaVersion: SchemaVersion, Kind: "call", Seq: c.Seq, Time: c.Start.UTC(),
		Component: c.Labels.Component, Operation: c.Labels.Operation,
		Volume: c.Labels.Volume, Pod: c.Labels.Pod, Asking: c.Labels.Asking,
		Method: c.Method, Request: r.JSON(c.Request), Response: r.JSON(c.Response),
		Code: c.Code.String(), Result: ResultOK,
		TimedOut:   c.TimedOut,
		DurationMS: float64(c.Duration.Microseconds()) / 1000,
	}
	if c.Err != nil {
		rec.Error = c.Err.Error()
		rec.Result = ResultFailed
	}
	if c.Code == codes.OK {
		rec.Code = "OK"
	}
	return rec
}

// Call prints one call.
func (p *JSONPrinter) Call(c Call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(p.redactor.Record(c))
}

// Step prints one step.
func (p *JSONPrinter) Step(s Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	level := "info"
	if s.Warning {
		level = "warning"
	} else if s.Verbose {
		level = "debug"
	}
	p.write(map[string]any{
		"schemaVersion": SchemaVersion, "kind": "step", "time": s.Time.UTC(), "component": s.Labels.Component,
		"operation": s.Labels.Operation, "volume": s.Labels.Volume, "pod": s.Labels.Pod,
		"level": level, "text": s.Text,
	})
}

// Object prints any other record (the summary).
func (p *JSONPrinter) Object(v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := v.(map[string]any); ok {
		m["schemaVersion"] = SchemaVersion
	}
	p.write(v)
}

// SortedKeys is a helper for printers of maps.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

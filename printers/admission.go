package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Admission prints the admission of each object of the input: the
// webhooks called and what they changed (text), or one JSON object each.
// It is the command's admission.Observer (session/admission).
type Admission struct {
	w       io.Writer
	json    bool
	verbose int
}

// NewAdmission prints to out; a webhook's messages and patches are data
// too: escaped (and tokens fingerprinted) as the driver's are.
func NewAdmission(out io.Writer, json bool, verbose int) *Admission {
	return &Admission{w: csiclient.Redactor{}.Writer(out), json: json, verbose: verbose}
}

// Admitted prints one object's admission.
func (p *Admission) Admitted(r *remote.Report, err error) {
	if p.json {
		m := map[string]any{"schemaVersion": csiclient.SchemaVersion, "kind": "admission", "object": r.Kind + " " + objName(r), "webhooks": r.Webhooks, "changes": r.Changes}
		if err != nil {
			m["error"] = err.Error()
		}
		_ = json.NewEncoder(p.w).Encode(m)
		return
	}
	called := false
	for _, w := range r.Webhooks {
		called = called || w.Called
	}
	if !called && err == nil && p.verbose == 0 {
		return // no webhook for this object: nothing to say unless asked
	}
	fmt.Fprintf(p.w, "admission: %s %s\n", r.Kind, objName(r))
	for _, w := range r.Webhooks {
		p.printWebhook(w)
	}
	if err != nil {
		fmt.Fprintf(p.w, "  refused: %v\n", err)
	}
}

func (p *Admission) printWebhook(w remote.WebhookReport) {
	name := fmt.Sprintf("%s (%s)", w.Webhook, w.Configuration)
	if w.Round > 0 {
		name += " reinvoked"
	}
	if !w.Called {
		fmt.Fprintf(p.w, "  %s: skipped: %s\n", name, w.Skipped)
		return
	}
	state := "allowed"
	switch {
	case w.FailedOpen:
		state = "failed, ignored (failurePolicy Ignore): " + w.Error
	case w.Error != "":
		state = w.Error
	case w.Mutated:
		state = "allowed, mutated"
	}
	fmt.Fprintf(p.w, "  %s: called %s in %s: %s\n", name, w.URL, w.Latency.Round(100*time.Microsecond), state)
	for _, ch := range w.Changes {
		fmt.Fprintf(p.w, "    + %s\n", ch)
	}
	for _, warn := range w.Warnings {
		fmt.Fprintf(p.w, "    warning: %s\n", warn)
	}
	keys := make([]string, 0, len(w.AuditAnnotations))
	for k := range w.AuditAnnotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(p.w, "    audit annotation %s=%s\n", k, w.AuditAnnotations[k])
	}
	if p.verbose > 0 && len(w.Patch) > 0 {
		fmt.Fprintf(p.w, "    patch: %s\n", strings.TrimSpace(string(w.Patch)))
	}
}

func objName(r *remote.Report) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/template"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// kubectl's output conventions: -o yaml, -o jsonpath=TEMPLATE,
// -o jsonpath-file=FILE, -o go-template=TEMPLATE and -o go-template-file=FILE
// on every command that prints objects, besides text and json. Every such
// command prints JSON records (one object per line) with -o json; the
// other formats are that JSON rendered record by record, so the fields are
// the same in every format. k8s.io/cli-runtime's printers would bring the
// resource builder (and kustomize) into the binary and its start-up; the
// jsonpath package and text/template give kubectl's semantics without.

// outputFormat is a parsed -o value.
type outputFormat struct {
	name string // text, json, yaml, jsonpath, go-template
	arg  string // the template
}

// outputValues are the -o forms, for help and completion.
var outputValues = []string{"text", "json", "yaml", "jsonpath=", "jsonpath-file=", "go-template=", "go-template-file="}

// parseOutput reads -o as kubectl does: a format, or a format=argument
// (the template itself, or a file holding it).
func parseOutput(s string) (outputFormat, error) {
	name, arg, hasArg := strings.Cut(s, "=")
	switch name {
	case "text", "json", "yaml":
		if hasArg {
			return outputFormat{}, fmt.Errorf("--output %q: %s takes no argument", s, name)
		}
		return outputFormat{name: name}, nil
	case "jsonpath", "go-template":
		if arg == "" {
			return outputFormat{}, fmt.Errorf("--output %q: %s needs a template: -o %s=TEMPLATE", s, name, name)
		}
		return outputFormat{name: name, arg: arg}, nil
	case "jsonpath-file", "go-template-file":
		b, err := os.ReadFile(arg)
		if err != nil {
			return outputFormat{}, fmt.Errorf("--output %s: %w", name, err)
		}
		return outputFormat{name: strings.TrimSuffix(name, "-file"), arg: string(b)}, nil
	}
	return outputFormat{}, fmt.Errorf("--output %q: want text, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE or go-template-file=FILE", s)
}

// renderer turns one JSON record into the chosen format.
type renderer func(w io.Writer, record map[string]any, first bool) error

func newRenderer(f outputFormat) (renderer, error) {
	switch f.name {
	case "yaml":
		return renderYAML, nil
	case "jsonpath":
		jp := jsonpath.New("output").AllowMissingKeys(true)
		if err := jp.Parse(f.arg); err != nil {
			return nil, fmt.Errorf("--output jsonpath: %w", err)
		}
		return func(w io.Writer, rec map[string]any, _ bool) error {
			var b bytes.Buffer
			if err := jp.Execute(&b, rec); err != nil {
				return err
			}
			// A record without the template's fields (a step, the
			// summary, among calls) gives at most the template's own
			// separators: it is skipped, not printed as a blank line.
			if len(bytes.TrimSpace(b.Bytes())) == 0 {
				return nil
			}
			return lineAfter(w, func(out io.Writer) error { _, err := out.Write(b.Bytes()); return err })
		}, nil
	case "go-template":
		t, err := template.New("output").Funcs(templateFuncs).Parse(f.arg)
		if err != nil {
			return nil, fmt.Errorf("--output go-template: %w", err)
		}
		return func(w io.Writer, rec map[string]any, _ bool) error {
			return lineAfter(w, func(b io.Writer) error { return t.Execute(b, rec) })
		}, nil
	}
	return nil, fmt.Errorf("--output %s: not a structured format", f.name)
}

// templateFuncs are kubectl's additions to go-template.
var templateFuncs = template.FuncMap{
	"base64decode": func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		return csiclient.PrintableLines(string(b)), err
	},
}

// renderYAML prints a record as a YAML document, "---" between records.
func renderYAML(w io.Writer, rec map[string]any, first bool) error {
	b, err := yaml.Marshal(rec)
	if err != nil {
		return err
	}
	if !first {
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return err
		}
	}
	_, err = w.Write(b)
	return err
}

// lineAfter runs a template and ends its output with a newline, so that
// the records of a stream are one line each (a single object, as kubectl
// prints it, just gains the newline a shell prompt wants).
func lineAfter(w io.Writer, run func(io.Writer) error) error {
	var b bytes.Buffer
	if err := run(&b); err != nil {
		return err
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// recordWriter takes the JSON lines a command prints and writes each
// object rendered; a line that is no JSON object passes unchanged.
type recordWriter struct {
	mu     sync.Mutex
	out    io.Writer
	render renderer
	buf    []byte
	n      int
	err    error
}

func (r *recordWriter) records() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *recordWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			return len(p), r.err
		}
		line := r.buf[:i+1]
		r.buf = r.buf[i+1:]
		r.line(line)
	}
}

func (r *recordWriter) line(line []byte) {
	var rec map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if d.Decode(&rec) != nil {
		_, _ = r.out.Write([]byte(csiclient.PrintableLines(string(line))))
		return
	}
	// The record was scrubbed and cut when it was printed as JSON, where
	// JSON's escapes kept its controls harmless; a template prints its
	// strings raw, so they are escaped here, as every other output does.
	rec, _ = csiclient.EscapeOnly().FieldTree(rec, csiclient.Lines).(map[string]any)
	if err := r.render(r.out, rec, r.n == 0); err != nil && r.err == nil {
		r.err = err
	}
	r.n++
}

// flush writes what is left without a newline.
func (r *recordWriter) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		r.line(append(r.buf, '\n'))
		r.buf = nil
	}
	return r.err
}

// outputSwitch is stdout as commands see it: the terminal or pipe, or a
// recordWriter over it while a command prints a structured format.
type outputSwitch struct {
	mu   sync.Mutex
	base io.Writer
	cur  io.Writer
}

func newOutputSwitch(w io.Writer) *outputSwitch { return &outputSwitch{base: w, cur: w} }

// Underlying is the stream the switch writes to when not diverted: a
// terminal's colour is judged on it.
func (o *outputSwitch) Underlying() io.Writer { return o.base }

func (o *outputSwitch) Write(p []byte) (int, error) {
	o.mu.Lock()
	w := o.cur
	o.mu.Unlock()
	return w.Write(p)
}

func (o *outputSwitch) set(w io.Writer) {
	o.mu.Lock()
	o.cur = w
	o.mu.Unlock()
}

// structuredOutput gives every command with an -o flag the structured
// formats: the command runs with -o json, and its output is rendered.
func structuredOutput(root *cobra.Command, out *outputSwitch) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		flag := c.Flags().Lookup("output")
		if flag == nil || c.RunE == nil {
			return
		}
		flag.Usage = strings.Replace(flag.Usage, "text or json", "text, json, yaml, jsonpath=TEMPLATE or go-template=TEMPLATE", 1)
		run := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			f, err := parseOutput(flag.Value.String())
			if err != nil {
				return session.WithCode(session.ExitUsage, err)
			}
			if f.name == "text" {
				return run(cmd, args)
			}
			if f.name == "json" {
				jw := &printedWatch{out: out.base}
				out.set(jw)
				defer out.set(out.base)
				runErr := run(cmd, args)
				if runErr != nil && !jw.printed() {
					_, _ = jw.Write(failureRecord(runErr))
				}
				return runErr
			}
			render, err := newRenderer(f)
			if err != nil {
				return session.WithCode(session.ExitUsage, err)
			}
			if err := flag.Value.Set("json"); err != nil {
				return err
			}
			rw := &recordWriter{out: out.base, render: render}
			out.set(rw)
			defer out.set(out.base)
			runErr := run(cmd, args)
			if runErr != nil && rw.records() == 0 {
				_, _ = rw.Write(failureRecord(runErr))
			}
			if err := rw.flush(); err != nil && runErr == nil {
				return session.WithCode(session.ExitUsage, fmt.Errorf("--output %s: %w", f.name, err))
			}
			return runErr
		}
	}
	walk(root)
}

// failureRecord is the record of a command that failed before it printed
// any (bad input, no socket: exit 2 and 3), so that -o json always says
// how the command ended and why; it has the fields of run's and
// conformance's summaries that say so. A command that printed records
// (its summary, validate's findings) has said it in them.
func failureRecord(err error) []byte {
	b, _ := json.Marshal(map[string]any{
		"schemaVersion": csiclient.SchemaVersion, "kind": "summary",
		"result": csiclient.ResultFailed, "exit_code": session.ExitCode(err),
		"error": csiclient.CutKeepEnd(err.Error(), csiclient.MaxLine, 1<<10),
	})
	return append(b, '\n')
}

// printedWatch passes -o json through and notes whether the command
// printed anything.
type printedWatch struct {
	mu    sync.Mutex
	out   io.Writer
	wrote bool
}

func (s *printedWatch) printed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wrote
}

func (s *printedWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrote = s.wrote || len(p) > 0
	return s.out.Write(p)
}

// printFailureRecord prints the failure record of a command refused
// before it ran, in the format its -o asks for (read from the arguments:
// the flags were not all parsed); nothing without -o or with a bad one.
func printFailureRecord(w io.Writer, cmd *cobra.Command, args []string, err error) {
	if cmd == nil || cmd.Flags().Lookup("output") == nil {
		return
	}
	f, perr := parseOutput(outputArg(args))
	switch {
	case perr != nil || f.name == "text":
		return
	case f.name == "json":
		_, _ = w.Write(failureRecord(err))
		return
	}
	render, rerr := newRenderer(f)
	if rerr != nil {
		return
	}
	rw := &recordWriter{out: w, render: render}
	_, _ = rw.Write(failureRecord(err))
	_ = rw.flush()
}

// outputArg is the last -o/--output value in args ("text" when none),
// before a "--".
func outputArg(args []string) string {
	v := "text"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return v
		case (a == "-o" || a == "--output") && i+1 < len(args):
			v = args[i+1]
			i++
		case strings.HasPrefix(a, "--output="):
			v = strings.TrimPrefix(a, "--output=")
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--"):
			v = strings.TrimPrefix(strings.TrimPrefix(a, "-o"), "=")
		}
	}
	return v
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// -o yaml, jsonpath and go-template render the records -o json prints,
// one by one, with kubectl's semantics (missing keys print nothing).
func TestOutputFormats(t *testing.T) {
	jsonOut, _, code := cli(t, "", "version", "-o", "json")
	if code != 0 {
		t.Fatalf("version -o json: exit %d", code)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(jsonOut), &want); err != nil {
		t.Fatal(err)
	}
	if want["schemaVersion"] != 1.0 {
		t.Errorf("version -o json: schemaVersion %v, want 1", want["schemaVersion"])
	}

	yamlOut, _, code := cli(t, "", "version", "-o", "yaml")
	var got map[string]any
	if code != 0 || yaml.Unmarshal([]byte(yamlOut), &got) != nil || got["version"] != want["version"] || got["go_version"] != want["go_version"] {
		t.Errorf("-o yaml: exit %d\n%s", code, yamlOut)
	}

	jp, _, code := cli(t, "", "version", "-o", "jsonpath={.kubelet_releases[0]} {.nothing}{.kubelet_default}")
	if code != 0 || jp != "1.30 "+want["kubelet_default"].(string)+"\n" {
		t.Errorf("-o jsonpath: exit %d %q", code, jp)
	}

	file := filepath.Join(t.TempDir(), "t.tmpl")
	if err := os.WriteFile(file, []byte(`{{.module}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"go-template={{.module}}", "go-template-file=" + file} {
		gt, _, code := cli(t, "", "version", "-o", arg)
		if code != 0 || gt != want["module"].(string)+"\n" {
			t.Errorf("-o %s: exit %d %q", arg, code, gt)
		}
	}
}

// A stream of records (validate's findings) renders record by record:
// YAML documents with "---" between them, a jsonpath line per record.
func TestOutputStream(t *testing.T) {
	dir := t.TempDir()
	f := writeTestFile(t, dir, "d.yaml", csiDriverYAML+"---\n"+strings.Replace(csiDriverYAML, "drv.example.com", "two.example.com", 1))
	out, _, code := cli(t, "", "validate", "-f", f, "-o", "jsonpath={.object} {.severity}")
	if code != 0 || out != "CSIDriver drv.example.com info\nCSIDriver two.example.com info\n" {
		t.Errorf("jsonpath stream: exit %d %q", code, out)
	}
	out, _, _ = cli(t, "", "validate", "-f", f, "-o", "yaml")
	docs := strings.Split(out, "---\n")
	if len(docs) != 2 || !strings.Contains(docs[1], "object: CSIDriver two.example.com") || !strings.Contains(docs[0], "line: 1") {
		t.Errorf("yaml stream: %q", out)
	}
}

// Bad -o values are usage errors, named.
func TestOutputErrors(t *testing.T) {
	for arg, want := range map[string]string{
		"xml":                 `--output "xml": want text, json, yaml`,
		"jsonpath=":           `--output "jsonpath=": jsonpath needs a template`,
		"jsonpath={.a":        "--output jsonpath: unclosed action",
		"go-template={{.a":    "--output go-template: ",
		"yaml=x":              `--output "yaml=x": yaml takes no argument`,
		"go-template-file=/x": "--output go-template-file: open /x: no such file or directory",
	} {
		_, stderr, code := cli(t, "", "version", "-o", arg)
		if code != session.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("-o %s: exit %d %q, want 2 and %q", arg, code, stderr, want)
		}
	}
}

// A record whose strings (a driver's error, its vendor_version) hold
// controls of every class is rendered by yaml, jsonpath and go-template
// with them escaped, as text output does; LF and TAB stay.
func TestOutputTemplatesEscape(t *testing.T) {
	const line = `{"kind":"call","error":"t\u001b]0;pwned\u0007 \u001b[2J\r\u009b31m \u202eevil \u2066x\u007f","response":{"vendor_version":"1.0\u202e"},"notes":"a\nb\tc"}` + "\n"
	for _, arg := range []string{"yaml", "jsonpath={.error} {.response.vendor_version} {.notes}", "jsonpath={@}", "go-template={{.error}} {{.response.vendor_version}} {{.notes}}", "go-template={{.}}"} {
		f, err := parseOutput(arg)
		if err != nil {
			t.Fatal(err)
		}
		render, err := newRenderer(f)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		rw := &recordWriter{out: &b, render: render}
		if _, err := rw.Write([]byte(line)); err != nil || rw.flush() != nil {
			t.Fatalf("-o %s: %v", arg, err)
		}
		out := b.String()
		for _, raw := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202e", "\u2066", "\x7f"} {
			if strings.Contains(out, raw) {
				t.Errorf("-o %s: raw %q in %q", arg, raw, out)
			}
		}
		if !strings.Contains(strings.ReplaceAll(out, `\\`, `\`), `\x1b]0;pwned\x07`) {
			t.Errorf("-o %s: the error is not shown escaped: %q", arg, out)
		}
	}
}

package e2e

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// kubectl's output conventions through the built binary (issue 23): -o
// yaml and -o jsonpath render every record -o json prints, on every
// command that prints objects; every record has schemaVersion and a
// result in the same words.
func TestOutputYAMLAndJSONPath(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	staged := sample(t, "staged")
	csidriver := writeFile(t, work, "d.yaml", csiDriverNamed(refDriverName, ""))
	for _, args := range [][]string{
		{"plan", "-f", staged},
		{"run", "-f", staged, "--endpoint", "unix://" + drv.Sock, "--root-dir", work + "/root"},
		{"validate", "-f", csidriver},
		{"version"},
	} {
		js := runSim(t, append(args, "-o", "json")...)
		wantCode(t, js, 0)
		records := strings.Split(strings.TrimSuffix(js.Stdout, "\n"), "\n")

		y := runSim(t, append(args, "-o", "yaml")...)
		wantCode(t, y, 0)
		docs := strings.Split(y.Stdout, "---\n")
		if len(docs) != len(records) {
			t.Errorf("%v -o yaml: %d documents, -o json %d records", args, len(docs), len(records))
		}
		for _, d := range docs {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(d), &m); err != nil || m["schemaVersion"] != 1.0 {
				t.Errorf("%v -o yaml: document without schemaVersion 1 (%v):\n%s", args, err, d)
				break
			}
		}

		jp := runSim(t, append(args, "-o", "jsonpath={.schemaVersion} {.result}")...)
		wantCode(t, jp, 0)
		lines := strings.Split(strings.TrimSuffix(jp.Stdout, "\n"), "\n")
		if len(lines) != len(records) {
			t.Errorf("%v -o jsonpath: %d lines for %d records", args, len(lines), len(records))
		}
		for _, l := range lines {
			if l != "1 OK" && l != "1 " {
				t.Errorf("%v -o jsonpath: line %q, want \"1 OK\" (or no result for a step)", args, l)
			}
		}
	}
}

// The --report page of `run` says what ran against what and how it ended,
// at the top: driver and version, endpoint, node, kubelet release, gates,
// the verdict and what was left behind; then the pod's story (issue 23).
func TestReportHeader(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	page := work + "/run.html"
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", work+"/root", "--node-name", "node-7", "--report", page,
		"--hold", "500ms", "--volume-stats-agg-period", "100ms")
	wantCode(t, r, 0)
	html := readFile(page)
	for _, want := range []string{
		"<title>csi-kubelet-sim run: 1 pod, kubelet 1.37",
		`<p id="verdict" class="verdict ok">Verdict: OK</p>`,
		`<p id="left-behind"><b>Left behind:</b> nothing`,
		`<td id="driver">` + refDriverName + ` 0.1.0</td>`,
		`<td id="endpoint">unix://` + drv.Sock + `</td>`,
		`<td id="node">node-7</td>`,
		`<td id="kubelet">kubelet 1.37`,
		`<td id="gates">`,
		`NodePublishVolume</span>`,
		// The pod's story, its stats rounds marked while it runs.
		`<g class="phase" data-phase="registration">`, `<g class="phase" data-phase="running">`,
		`<g class="phase" data-phase="teardown">`, `data-kind="stats"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page has no %s", want)
		}
	}
}

// plan --report and conformance --report write their pages: plan's
// planned calls; conformance's scenarios as rows, a failed scenario with
// its calls, the failed call marked (issue 23).
func TestReportPlanAndConformance(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	planPage := work + "/plan.html"
	r := runSim(t, "plan", "-f", sample(t, "staged"), "--report", planPage)
	wantCode(t, r, 0)
	html := readFile(planPage)
	for _, want := range []string{"<title>csi-kubelet-sim plan: 1 pod", `<td id="driver">` + refDriverName + ` planned</td>`, "NodeStageVolume</span>"} {
		if !strings.Contains(html, want) {
			t.Errorf("plan page has no %s", want)
		}
	}

	drv := startRefDriver(t, work, "--fault", "NodeUnpublishVolume=Internal")
	confPage := work + "/conformance.html"
	r = runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--report", confPage)
	wantCode(t, r, 1)
	html = readFile(confPage)
	for _, want := range []string{
		`<p id="verdict" class="verdict failed">FAILED: `,
		`<tr class="fail" data-scenario="lifecycle/persistent"><td class="res">FAIL</td>`,
		`<tr class="pass" data-scenario="registration/node-info"><td class="res">PASS</td>`,
		`<tr class="failed"><td>NodeUnpublishVolume</td>`,
		`<td id="driver">` + refDriverName + ` 0.1.0</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("conformance page has no %s", want)
		}
	}
}

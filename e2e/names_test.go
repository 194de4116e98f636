package e2e

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Names that would lead out of the root dir, as a hostile manifest or flag
// writes them, refused by the built binary before any path is built: exit 2,
// one line naming file, document and field (or the flag), and nothing
// created, outside the root dir or in it. The API server refuses each of
// these names (pkg/apis/core/validation ValidateCSIDriverName,
// NameIsDNSSubdomain, ValidateVolumes), except the pod UID, which it
// assigns itself and the simulator requires to be a DNS-1123 subdomain.
func TestTraversalRefused(t *testing.T) {
	const (
		driver    = "ref.csi.kubelet-sim.io"
		csiDriver = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: " + driver + "}\nspec: {attachRequired: false, volumeLifecycleModes: [Persistent, Ephemeral]}\n"
	)
	pod := func(meta, volumes string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {" + meta + "}\nspec: {containers: [{name: app, image: pause}], volumes: [" + volumes + "]}\n"
	}
	claim := func(pvName, pvSpec string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: " + pvName + "}\nspec: {accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}, " + pvSpec + "}\n---\n" +
			"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: default}\nspec: {accessModes: [ReadWriteOnce], volumeName: " + pvName + ", resources: {requests: {storage: 1Gi}}}\n---\n" +
			pod("name: app, namespace: default", "{name: data, persistentVolumeClaim: {claimName: data}}")
	}
	inline := "{name: scratch, csi: {driver: " + driver + "}}"
	tests := []struct {
		name      string
		manifests string   // "" for none (the default pod)
		flags     []string // extra flags, for both commands
		planOnly  []string // extra flags for plan only
		want      string   // the field and value in the one-line error
	}{
		{"pod uid", csiDriver + "---\n" + pod(`name: app, uid: "../../X"`, inline), nil, nil, `document 2: metadata.uid: Invalid value: "../../X"`},
		{"block PV name", claim(`"../../../X"`, "volumeMode: Block, csi: {driver: "+driver+", volumeHandle: h1}"), nil, nil, `document 1: metadata.name: Invalid value: "../../../X"`},
		{"filesystem PV name", claim(`"../../X"`, "csi: {driver: "+driver+", volumeHandle: h1}"), nil, nil, `document 1: metadata.name: Invalid value: "../../X"`},
		{"driver in a PV", claim("pv-1", `csi: {driver: "../../X", volumeHandle: h1}`), nil, nil, `document 1: spec.csi.driver: Invalid value: "../../X"`},
		{"driver in an inline volume", pod("name: app", `{name: scratch, csi: {driver: "../../X"}}`), nil, nil, `document 1: spec.volumes[0].csi.driver: Invalid value: "../../X"`},
		{"inline volume name", csiDriver + "---\n" + pod("name: app", `{name: "../../X", csi: {driver: `+driver+`}}`), nil, nil, `document 2: spec.volumes[0].name: Invalid value: "../../X"`},
		{"CSIDriver name", strings.Replace(csiDriver, "name: "+driver, `name: "../../X"`, 1), nil, nil, `document 1: metadata.name: Invalid value: "../../X"`},
		{"pod namespace", csiDriver + "---\n" + pod(`name: app, namespace: "../../X"`, inline), nil, nil, `document 2: metadata.namespace: Invalid value: "../../X"`},
		{"VolumeAttachment attacher", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\nspec: {attacher: \"../../X\", nodeName: sim-node, source: {persistentVolumeName: pv-1}}\n", nil, nil, `document 1: spec.attacher: Invalid value: "../../X"`},
		{"--pod-uid", "", []string{"--pod-uid", "../../X"}, []string{"--driver-name", driver}, `--pod-uid: Invalid value: "../../X"`},
		{"plan --driver-name", "", nil, []string{"--driver-name", "../../X"}, `--driver-name: Invalid value: "../../X"`},
	}
	attempts := 0
	for _, tc := range tests {
		for _, cmd := range []string{"plan", "run"} {
			if cmd == "run" && tc.manifests == "" && len(tc.flags) == 0 {
				continue // --driver-name is a plan flag
			}
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				work := workDir(t)
				root := filepath.Join(work, "a", "b", "c", "root")
				args := []string{cmd, "--root-dir", root, "--node-name", simNode}
				if tc.manifests != "" {
					args = append(args, "-f", writeFile(t, work, "in.yaml", tc.manifests))
				}
				args = append(args, tc.flags...)
				if cmd == "plan" {
					args = append(args, tc.planOnly...)
				} else {
					args = append(args, "--endpoint", "unix://"+filepath.Join(work, "no-driver.sock"))
				}
				before := tree(t, work)
				r := runSim(t, args...)
				attempts++
				wantCode(t, r, 2)
				// The problem's line (": line N") aside, the message as before.
				if msg := problemLineRE.ReplaceAllString(oneLineError(t, r), ""); !strings.Contains(msg, tc.want) {
					t.Errorf("stderr %q does not mention %q", msg, tc.want)
				}
				if after := tree(t, work); !slices.Equal(before, after) {
					t.Errorf("the run changed %s:\nbefore %q\nafter  %q", work, before, after)
				}
			})
		}
	}
	t.Logf("%d traversal attempts refused with exit 2", attempts)
}

// A driver whose GetPluginInfo name would lead out of plugins_registry
// never registers: the kubelet's CSINode update would fail on it. The run
// fails (exit 1, the driver's fault) before any path is built, and leaves
// nothing.
func TestTraversalDriverNameFromGetPluginInfo(t *testing.T) {
	work := workDir(t)
	drv := startMock(t, work, "--name=../../X")
	defer drv.Stop()
	root := filepath.Join(work, "a", "b", "c", "root")
	before := tree(t, work)
	r := runSim(t, "run", "--endpoint", "unix://"+filepath.Join(work, "mock.sock"), "--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 1)
	if !strings.Contains(r.Stdout+r.Stderr, `RegisterPlugin error -- GetPluginInfo.name: Invalid value: "../../X"`) {
		t.Errorf("the output does not name the driver's name\n%s", r)
	}
	if after := tree(t, work); !slices.Equal(before, after) {
		t.Errorf("the run changed %s:\nbefore %q\nafter  %q", work, before, after)
	}
	if m := mountsUnder(work); len(m) > 0 {
		t.Errorf("mounted: %v", m)
	}
}

// tree lists every path under dir, sorted; log files are left out.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !strings.HasSuffix(p, ".log") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Inputs with no end: a List of 100,000 empty Lists (4.5 MB) took seconds
// and printed 100,000 warnings; now the run stops at the object limit, at
// once, naming the file, the item and the limit.
func TestInputLimits(t *testing.T) {
	work := workDir(t)
	items := strings.TrimSuffix(strings.Repeat(`{"apiVersion":"v1","kind":"List","items":[]},`, 100000), ",")
	big := writeFile(t, work, "big.json", `{"apiVersion":"v1","kind":"List","items":[`+items+`]}`)
	start := time.Now()
	r := runSim(t, "plan", "-f", big, "--driver-name", "x.example.com", "--node-name", simNode)
	took := time.Since(start)
	wantCode(t, r, 2)
	oneLineError(t, r, big+": document 1, items[9999]: more than 10000 objects (documents and List items) in one run (the simulator's limit)")
	// What the user sees of "at once": no warning per item (the old run
	// printed 100,000); the time is logged, not asserted (a loaded machine
	// stretches it).
	if n := strings.Count(r.Stdout+r.Stderr, "\n"); n > 5 {
		t.Errorf("refusing printed %d lines, want the one error", n)
	}
	t.Logf("refused in %v", took)
}

// problemLineRE is the line a problem names after its file and document.
var problemLineRE = regexp.MustCompile(`: line \d+`)

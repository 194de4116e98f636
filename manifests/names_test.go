package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// apimachinery's messages, as the API server words them.
const (
	subdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	labelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	identMsg     = `must consist of letters, digits, '_', '.' or '-': the kubelet sends the label to the driver inside the mount option context="..."`
)

// Every name that reaches a path under the root dir, or names an object the
// kubelet looks up, is refused as the API server refuses it on create: the
// loader's error names file, document and field.
func TestLoadRefusesNames(t *testing.T) {
	pod := func(meta, spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {" + meta + "}\nspec: {containers: [{name: c, image: i}]" + spec + "}"
	}
	pv := func(name, csi string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: " + name + "}\nspec: {volumeMode: Block, csi: {" + csi + "}}"
	}
	tests := []struct {
		name string
		doc  string
		want string // "" for valid
	}{
		{"pod uid escapes", pod(`name: p, uid: "../../X"`, ""), `metadata.uid: Invalid value: "../../X": ` + subdomainMsg},
		{"pod uid with a slash", pod(`name: p, uid: "a/b"`, ""), `metadata.uid: Invalid value: "a/b": ` + subdomainMsg},
		{"pod uid ..", pod(`name: p, uid: ".."`, ""), `metadata.uid: Invalid value: "..": ` + subdomainMsg},
		{"pod uid a UUID", pod(`name: p, uid: 0D4E8E0C-7F1A-4B9E-9A63-2C7E5B1F3A10`, ""), ""},
		{"pod name", pod(`name: "../p"`, ""), `metadata.name: Invalid value: "../p": ` + subdomainMsg},
		{"pod namespace", pod(`name: p, namespace: "../../etc"`, ""), `metadata.namespace: Invalid value: "../../etc": ` + labelMsg},
		{"pod volume name", pod("name: p", `, volumes: [{name: "../v", emptyDir: {}}]`), `spec.volumes[0].name: Invalid value: "../v": ` + labelMsg},
		{"inline driver escapes", pod("name: p", `, volumes: [{name: v, csi: {driver: "../../X"}}]`), `spec.volumes[0].csi.driver: Invalid value: "../../X": ` + subdomainMsg},
		{"inline driver in capitals is valid", pod("name: p", `, volumes: [{name: v, csi: {driver: Example.COM}}]`), ""},
		{"block PV name escapes", pv(`"../../../X"`, "driver: d.example.com, volumeHandle: h"), `metadata.name: Invalid value: "../../../X": ` + subdomainMsg},
		{"PV driver escapes", pv("pv", `driver: "../../X", volumeHandle: h`), `spec.csi.driver: Invalid value: "../../X": ` + subdomainMsg},
		{"PV driver too long", pv("pv", "driver: "+strings.Repeat("a", 64)+", volumeHandle: h"), "spec.csi.driver: Too long: may not be more than 63 bytes"},
		{"PV mount option with an open quote", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {mountOptions: [ro, 'x=\"y'], csi: {driver: d, volumeHandle: h}}",
			`spec.mountOptions[1]: Invalid value: "x=\"y": an unbalanced '"' would join it with the mount options after it`},
		{"PV mount option quoted is fine", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {mountOptions: ['x=\"a,b\"'], csi: {driver: d, volumeHandle: h}}", ""},
		{"CSIDriver name escapes", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: \"../../X\"}\nspec: {}", `metadata.name: Invalid value: "../../X": ` + subdomainMsg},
		{"PVC name", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"a/b\"}\nspec: {}", `metadata.name: Invalid value: "a/b": ` + subdomainMsg},
		{"Secret namespace", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: A_B}", `metadata.namespace: Invalid value: "A_B": ` + labelMsg},
		{"ServiceAccount name", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: \"..\"}", `metadata.name: Invalid value: "..": ` + subdomainMsg},
		{"Node name", "apiVersion: v1\nkind: Node\nmetadata: {name: \"n/x\"}", `metadata.name: Invalid value: "n/x": ` + subdomainMsg},
		{"VolumeAttachment attacher", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\nspec: {attacher: \"../X\", nodeName: node1, source: {persistentVolumeName: pv}}",
			`spec.attacher: Invalid value: "../X": ` + subdomainMsg},
		{"VolumeAttachment PV name", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\nspec: {attacher: d, nodeName: node1, source: {persistentVolumeName: \"../pv\"}}",
			`spec.source.persistentVolumeName: Invalid value: "../pv": ` + subdomainMsg},
		{"SELinux user with a quote", pod("name: p", `, securityContext: {seLinuxOptions: {user: 'x",suid,y="'}}`),
			`spec.securityContext.seLinuxOptions.user: Invalid value: "x\",suid,y=\"": ` + identMsg},
		{"container SELinux type with a colon", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, securityContext: {seLinuxOptions: {type: 'a:b'}}}]}",
			`spec.containers[0].securityContext.seLinuxOptions.type: Invalid value: "a:b": ` + identMsg},
		{"SELinux level with categories", pod("name: p", `, securityContext: {seLinuxOptions: {user: system_u, level: 's0-s0:c0.c1023,c5'}}`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Loader{Stdin: strings.NewReader(tc.doc)}).Load([]string{"-"})
			want := "-: document 1: " + tc.want
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error = %v, want none", err)
			case tc.want != "" && (err == nil || withoutLines(err.Error()) != want):
				t.Errorf("error = %v\nwant    %s", err, want)
			}
		})
	}
}

// The flags and the GetPluginInfo name are checked by the same functions.
func TestValidateDriverNameAndPodUID(t *testing.T) {
	tests := []struct {
		name, value string
		check       func(string, *field.Path) error
		want        string
	}{
		{"driver escapes", "../../X", ValidateDriverName, `--flag: Invalid value: "../../X": ` + subdomainMsg},
		{"driver empty", "", ValidateDriverName, "--flag: Required value"},
		{"driver fine", "hostpath.csi.k8s.io", ValidateDriverName, ""},
		{"uid empty is derived", "", ValidatePodUID, ""},
		{"uid escapes", "../../X", ValidatePodUID, `--flag: Invalid value: "../../X": ` + subdomainMsg},
		{"uid absolute", "/etc", ValidatePodUID, `--flag: Invalid value: "/etc": ` + subdomainMsg},
		{"uid a UUID", "9b2f0e3c-1d4a-4e7b-8f6a-0c5d2e1b3a49", ValidatePodUID, ""},
		{"spec name escapes", "../../../X", ValidateSpecName, `--flag: Invalid value: "../../../X": ` + subdomainMsg},
		{"spec name empty", "", ValidateSpecName, "--flag: Required value"},
		{"spec name a PV", "pvc-0d4e8e0c.example", ValidateSpecName, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check(tc.value, field.NewPath("--flag"))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSplitMountOptions(t *testing.T) {
	tests := []struct{ in, want string }{
		{`ro,noexec`, `ro|noexec`},
		{`ro,context="system_u:object_r:container_file_t:s0:c1,c2"`, `ro|context="system_u:object_r:container_file_t:s0:c1,c2"`},
		{`context="a\",suid,b=\":c"`, `context="a\"|suid|b=\":c"`},
		{``, ``},
	}
	for _, tc := range tests {
		if got := strings.Join(SplitMountOptions(tc.in), "|"); got != tc.want {
			t.Errorf("SplitMountOptions(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A run reads at most Limits.Bytes and Limits.Objects; the error names the
// file, the document and the limit.
func TestLoadLimits(t *testing.T) {
	list := func(n int) string {
		return "apiVersion: v1\nkind: List\nitems: [" + strings.TrimSuffix(strings.Repeat("{apiVersion: v1, kind: List, items: []},", n), ",") + "]\n"
	}
	tests := []struct {
		name   string
		input  string
		limits Limits
		want   string
	}{
		{"List of Lists over the object limit", list(5), Limits{Objects: 5}, "-: document 1, items[4]: more than 5 objects (documents and List items) in one run (the simulator's limit)"},
		{"at the object limit", list(4), Limits{Objects: 5}, ""},
		{"documents over the object limit", strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\n", 3), Limits{Objects: 2}, "-: document 3: more than 2 objects (documents and List items) in one run (the simulator's limit)"},
		{"bytes over the limit", "apiVersion: v1\nkind: ConfigMap\n" + strings.Repeat("# padding\n", 100), Limits{Bytes: 512}, "-: document 1: more than 512 bytes of manifests in one run (the simulator's limit)"},
		{"default byte limit", "apiVersion: v1\nkind: ConfigMap\n" + strings.Repeat("# padding padding padding padding padding padding\n", 200000), Limits{}, "-: document 1: more than 8 MiB of manifests in one run (the simulator's limit)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Loader{Stdin: strings.NewReader(tc.input), Limits: tc.limits}).Load([]string{"-"})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

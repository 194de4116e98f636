package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// A driver name one typo away from the right one gets a did-you-mean, as
// a field name does: a pod's inline volume against the CSIDriver objects,
// a PersistentVolume's driver against the registered driver, a CSIDriver
// against the name the driver registers (issue 32).
func TestDriverNameDidYouMean(t *testing.T) {
	const pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  claimRef: {namespace: default, name: c1}\n  csi: {driver: ref.csi.kubelet-sim.oi, volumeHandle: h1}\n---\n" +
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c1, namespace: default}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n  volumeName: pv1\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: app, image: x, volumeMounts: [{name: v, mountPath: /v}]}]\n  volumes: [{name: v, persistentVolumeClaim: {claimName: c1}}]\n"
	const typoCSIDriver = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: ref.csi.kubelet-sim.oi}\nspec: {attachRequired: false}\n---\n"
	dir := t.TempDir()
	inline := writeTestFile(t, dir, "inline.yaml", csiDriverYAML+"---\n"+strings.Replace(inlinePodYAML, "driver: drv.example.com", "driver: drv.exmaple.com", 1))
	pvFile := writeTestFile(t, dir, "pv.yaml", typoCSIDriver+pv)
	typoFile := writeTestFile(t, dir, "csidriver.yaml", typoCSIDriver)
	drvSock := csifake.ServeTest(t, csifake.New(csifake.Config{Name: testDriver, NodeID: "n1", ManageTargets: true}))
	refSock := csifake.ServeTest(t, stagingDriver())
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"inline volume", []string{"run", "-f", inline, "--endpoint", drvSock}, []string{
			`driver name drv.exmaple.com not found in the list of registered CSI drivers (did you mean "drv.example.com"?)`}},
		{"PV and CSIDriver", []string{"run", "-f", pvFile, "--endpoint", refSock}, []string{
			`driver name ref.csi.kubelet-sim.oi not found in the list of registered CSI drivers (did you mean "ref.csi.kubelet-sim.io"?)`,
			`CSIDriver "ref.csi.kubelet-sim.oi" does not match the registered driver "ref.csi.kubelet-sim.io" (did you mean "ref.csi.kubelet-sim.io"?)`}},
		{"validate", []string{"validate", "-f", inline}, []string{`no CSIDriver named "drv.exmaple.com" (did you mean "drv.example.com"?)`}},
		{"conformance", []string{"conformance", "-f", typoFile, "--endpoint", refSock}, []string{
			`no CSIDriver named "ref.csi.kubelet-sim.io", the name the driver registers (GetPluginInfo); given: ref.csi.kubelet-sim.oi (did you mean "ref.csi.kubelet-sim.io"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			args := tc.args
			if args[0] == "run" {
				args = append(args, "--root-dir", root, "--node-name", "n1")
			}
			stdout, stderr, code := cli(t, "", args...)
			for _, want := range tc.want {
				if !strings.Contains(stdout+stderr, want) {
					t.Errorf("exit %d; output lacks %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
				}
			}
		})
	}
}

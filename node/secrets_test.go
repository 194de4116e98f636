package node

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §9: a live GET of the Secret, its data as strings; a missing
// Secret gives the kubelet's text.
func TestCredentialsFromSecret(t *testing.T) {
	e := newUnregisteredEnv(t, `apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: storage}
data: {user: YWRtaW4=, key: AAEC}
stringData: {extra: plain}`, newFakeDriver())
	tests := []struct {
		name    string
		ref     corev1.SecretReference
		want    map[string]string
		wantErr string
	}{
		{"found", corev1.SecretReference{Name: "creds", Namespace: "storage"},
			map[string]string{"user": "admin", "key": "\x00\x01\x02", "extra": "plain"}, ""},
		{"other namespace", corev1.SecretReference{Name: "creds", Namespace: "default"},
			map[string]string{}, `kubernetes.io/csi: failed to find the secret creds in the namespace default with error: secrets "creds" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.k.vm.CredentialsFromSecret(&tc.ref)
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) || tc.wantErr == "" && err != nil {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("credentials = %q, want %q", got, tc.want)
			}
		})
	}
	if got := csiplugin.SecretRefText(&corev1.SecretReference{Name: "n", Namespace: "ns"}); got != "ns/n" {
		t.Errorf("secretRefText = %q", got)
	}
}

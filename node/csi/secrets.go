package csi

// secrets.go follows pkg/volume/csi/csi_util.go getCredentialsFromSecret.

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// CredentialsFromSecret is getCredentialsFromSecret in csi_util.go: a live
// GET of the Secret every time, its data as strings.
func (k *Plugin) CredentialsFromSecret(ref *corev1.SecretReference) (map[string]string, error) {
	creds := map[string]string{}
	s, ok := k.Cluster.Secret(ref.Namespace, ref.Name)
	if !ok {
		return creds, errors.New(rootdir.PluginLog("failed to find the secret %s in the namespace %s with error: secrets %q not found", ref.Name, ref.Namespace, ref.Name))
	}
	for key, v := range s.Data {
		creds[key] = string(v)
	}
	return creds, nil
}

func SecretRefText(ref *corev1.SecretReference) string {
	return fmt.Sprintf("%s/%s", ref.Namespace, ref.Name)
}

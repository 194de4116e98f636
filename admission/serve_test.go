package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// serveAll sends the requests to Serve and returns its answers, one each.
func serveAll(t *testing.T, reqs ...*remote.Request) []remote.Response {
	t.Helper()
	var in, out bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := Serve(context.Background(), &in, &out); err != nil {
		t.Fatal(err)
	}
	var resps []remote.Response
	dec := json.NewDecoder(&out)
	for {
		var r remote.Response
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, r)
	}
	if len(resps) != len(reqs) {
		t.Fatalf("%d answers to %d requests", len(resps), len(reqs))
	}
	return resps
}

func encodePod(t *testing.T, p *corev1.Pod) *remote.Object {
	t.Helper()
	o, err := remote.EncodeObject(p)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The helper's protocol carries what the commands need across the process
// boundary: validation errors per configuration, the mutated object, the
// report, a refusal as a typed error, and the release's defaults applied
// after a patch.
func TestServeProtocol(t *testing.T) {
	ca := newTestCA(t)
	deny := func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no pods today"}}
	}
	srv, _ := ca.serve(t, map[string]handlerFunc{"/inject": patch(injectVolume), "/deny": deny})
	inject := config("inject", hookTo("inject.example.com", srv.URL+"/inject", ca.caPEM))
	bad := config("bad", hookTo("no-dots", srv.URL+"/inject", ca.caPEM))
	refused := testPod()
	refused.Namespace = "closed"
	denyHook := hookTo("deny.example.com", srv.URL+"/deny", ca.caPEM)
	denyHook.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "closed"}}

	resps := serveAll(t,
		&remote.Request{Op: remote.OpValidate, Configs: []*admissionregistrationv1.MutatingWebhookConfiguration{inject, bad}},
		&remote.Request{Op: remote.OpAdmit, Object: encodePod(t, testPod())},
		&remote.Request{Op: remote.OpStart, Options: &remote.Options{User: remote.DefaultUser}, Defaults: &manifests.Defaults{},
			Configs: []*admissionregistrationv1.MutatingWebhookConfiguration{inject, config("z-deny", denyHook)}},
		&remote.Request{Op: remote.OpAdmit, Object: encodePod(t, testPod())},
		&remote.Request{Op: remote.OpAdmit, Object: encodePod(t, refused)},
	)
	if v := resps[0].Invalid; len(v) != 2 || len(v[0]) != 0 || len(v[1]) != 1 || !strings.Contains(v[1][0], "webhooks[0].name") {
		t.Errorf("validate: %q, want the second configuration's webhook name refused", v)
	}
	if resps[1].Err == "" {
		t.Errorf("admit before start answered %+v, want an error", resps[1])
	}
	if resps[2].Err != "" {
		t.Fatalf("start: %s", resps[2].Err)
	}
	obj, err := remote.DecodeObject(resps[3].Object)
	if err != nil {
		t.Fatalf("admit: %v (%+v)", err, resps[3])
	}
	p := obj.(*corev1.Pod)
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].CSI == nil || p.Labels["injected"] != "true" {
		t.Errorf("admitted pod: %+v", p)
	}
	// The release's API server defaults, applied after the patch as the
	// API server does: the service account, and the pod's UID.
	if p.Spec.ServiceAccountName != "default" || p.UID == "" {
		t.Errorf("serviceAccountName %q, uid %q after admission, want the defaults", p.Spec.ServiceAccountName, p.UID)
	}
	if r := resps[3].Report; r == nil || len(r.Webhooks) != 2 || !r.Webhooks[0].Mutated || r.Webhooks[1].Called {
		t.Errorf("report: %+v", r)
	}
	if e := resps[4].Refused; e == nil || e.Kind != remote.Denied || e.Webhook != "deny.example.com" || !strings.Contains(e.Message, "no pods today") {
		t.Errorf("refusal: %+v (%+v)", e, resps[4])
	}
}

package admission

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

const svcName = "injector.webhooks.svc"

func ptr[T any](v T) *T { return &v }

// hookTo is a webhook on pod creation calling url (defaults applied).
func hookTo(name, url string, ca []byte) admissionregistrationv1.MutatingWebhook {
	h := admissionregistrationv1.MutatingWebhook{
		Name:                    name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
	}
	manifests.SetDefaultsMutatingWebhook(&h)
	return h
}

func config(name string, hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

const injectVolume = `[
 {"op":"add","path":"/spec/volumes","value":[{"name":"secrets-store","csi":{"driver":"secrets.csi.example.com","readOnly":true,"volumeAttributes":{"vault":"kv"}}}]},
 {"op":"add","path":"/spec/containers/0/volumeMounts","value":[{"name":"secrets-store","mountPath":"/mnt/secrets"}]},
 {"op":"add","path":"/metadata/labels/injected","value":"true"}]`

func admit(t *testing.T, opts Options, obj runtime.Object, configs ...*admissionregistrationv1.MutatingWebhookConfiguration) (runtime.Object, *Report, error) {
	t.Helper()
	a, err := New(opts, configs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a.AdmitCreate(context.Background(), obj)
}

func TestInjectsVolume(t *testing.T) {
	ca := newTestCA(t)
	srv, got := ca.serve(t, map[string]handlerFunc{"/inject": patch(injectVolume)})
	out, r, err := admit(t, Options{}, testPod(), config("inject", hookTo("inject.example.com", srv.URL+"/inject", ca.caPEM)))
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].CSI == nil || p.Spec.Volumes[0].CSI.Driver != "secrets.csi.example.com" {
		t.Fatalf("volumes after admission: %+v", p.Spec.Volumes)
	}
	if p.Labels["injected"] != "true" {
		t.Errorf("labels: %v", p.Labels)
	}
	req := (*got)[0]
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.Namespace != "team-a" || req.Name != "app" {
		t.Errorf("request: %+v", req)
	}
	if req.UserInfo.Username != "kubernetes-admin" || req.RequestKind == nil || req.RequestKind.Kind != "Pod" ||
		req.RequestResource == nil || req.RequestResource.Resource != "pods" || req.UID == "" {
		t.Errorf("request user/requestKind/uid: %+v", req)
	}
	if req.DryRun == nil || *req.DryRun || !strings.Contains(string(req.Options.Raw), `"kind":"CreateOptions"`) {
		t.Errorf("request dryRun/options: %v %s", req.DryRun, req.Options.Raw)
	}
	w := r.Webhooks[0]
	if !w.Called || !w.Allowed || !w.Mutated || w.Latency <= 0 {
		t.Errorf("report: %+v", w)
	}
	want := []string{
		"added label injected=true",
		`added volume secrets-store (CSI inline, driver secrets.csi.example.com, volumeAttributes map[vault:kv])`,
		"container c: mounts volume secrets-store at /mnt/secrets",
	}
	if strings.Join(w.Changes, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(w.Changes, "\n"), strings.Join(want, "\n"))
	}
}

func TestMatching(t *testing.T) {
	ca := newTestCA(t)
	srv, _ := ca.serve(t, map[string]handlerFunc{"/label": patch(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)})
	url := srv.URL + "/label"
	nsTeamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"inject": "enabled"}}}
	cases := []struct {
		name    string
		edit    func(*admissionregistrationv1.MutatingWebhook)
		called  bool
		skipped string
	}{
		{"every pod", func(*admissionregistrationv1.MutatingWebhook) {}, true, ""},
		{"secrets only", func(h *admissionregistrationv1.MutatingWebhook) { h.Rules[0].Resources = []string{"secrets"} },
			false, `no rule matches CREATE pods (group "", version v1)`},
		{"UPDATE only", func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
		}, false, `no rule matches CREATE pods (group "", version v1)`},
		{"cluster scope", func(h *admissionregistrationv1.MutatingWebhook) {
			h.Rules[0].Scope = ptr(admissionregistrationv1.ClusterScope)
		},
			false, `no rule matches CREATE pods (group "", version v1)`},
		{"namespace label", func(h *admissionregistrationv1.MutatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "enabled"}}
		}, true, ""},
		{"namespace name label", func(h *admissionregistrationv1.MutatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}}
		}, true, ""},
		{"other namespace label", func(h *admissionregistrationv1.MutatingWebhook) {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "disabled"}}
		}, false, `namespaceSelector does not match namespace "team-a"`},
		{"object label", func(h *admissionregistrationv1.MutatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}, true, ""},
		{"object label mismatch", func(h *admissionregistrationv1.MutatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}}
		}, false, "objectSelector does not match the object's labels"},
		{"CEL true", func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "is-web", Expression: `object.metadata.labels["app"] == "web" && request.userInfo.username == "kubernetes-admin"`}}
		}, true, ""},
		{"CEL false", func(h *admissionregistrationv1.MutatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "always", Expression: "true"},
				{Name: "not-kube-system", Expression: `request.namespace == "kube-system"`}}
		}, false, `matchCondition "not-kube-system" is false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := hookTo("label.example.com", url, ca.caPEM)
			tc.edit(&h)
			out, r, err := admit(t, Options{Namespaces: []*corev1.Namespace{nsTeamA}}, testPod(), config("c", h))
			if err != nil {
				t.Fatal(err)
			}
			w := r.Webhooks[0]
			if w.Called != tc.called || w.Skipped != tc.skipped {
				t.Errorf("called %v skipped %q, want %v %q", w.Called, w.Skipped, tc.called, tc.skipped)
			}
			if got := out.(*corev1.Pod).Labels["seen"] == "yes"; got != tc.called {
				t.Errorf("label seen set: %v", got)
			}
		})
	}
}

func TestServiceClientConfig(t *testing.T) {
	ca := newTestCA(t, svcName)
	srv, _ := ca.serve(t, map[string]handlerFunc{"/inject": patch(injectVolume)})
	h := hookTo("inject.example.com", "", ca.caPEM)
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "injector", Path: ptr("/inject"), Port: ptr(int32(443))},
		CABundle: ca.caPEM,
	}
	addr := strings.TrimPrefix(srv.URL, "https://")
	out, _, err := admit(t, Options{Services: map[string]string{"webhooks/injector:443": addr}}, testPod(), config("c", h))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.(*corev1.Pod).Spec.Volumes) != 1 {
		t.Errorf("volume not injected through the service")
	}
	_, _, err = admit(t, Options{}, testPod(), config("c", h))
	if err == nil || !strings.Contains(err.Error(), "give --webhook-service webhooks/injector:443=HOST:PORT") {
		t.Errorf("unmapped service: %v", err)
	}
}

func TestFailures(t *testing.T) {
	ca := newTestCA(t)
	other := newTestCA(t)
	deny := func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: "pods need the team label"}}
	}
	srv, _ := ca.serve(t, map[string]handlerFunc{
		"/deny":    deny,
		"/badpath": patch(`[{"op":"replace","path":"/spec/nosuchfield/x","value":1}]`),
		"/notjson": patch(`[{"op":"add"`),
	})
	cases := []struct {
		name    string
		url     string
		ca      []byte
		timeout int32
		kind    ErrorKind
		msg     string
	}{
		{"denied", srv.URL + "/deny", ca.caPEM, 10, Denied, `admission webhook "w.example.com" denied the request: pods need the team label`},
		{"unreachable", "https://" + refusedAddr(t) + "/x", ca.caPEM, 10, CallFailed, `failed calling webhook "w.example.com"`},
		{"wrong CA", srv.URL + "/deny", other.caPEM, 10, CallFailed, "certificate signed by unknown authority"},
		{"malformed answer", srv.URL + "/malformed", ca.caPEM, 10, CallFailed, `failed calling webhook "w.example.com"`},
		{"timeout", srv.URL + "/slow", ca.caPEM, 1, CallFailed, "context deadline exceeded"},
		{"patch does not apply", srv.URL + "/badpath", ca.caPEM, 10, PatchFailed, "nosuchfield"},
		{"undecodable patch", srv.URL + "/notjson", ca.caPEM, 10, CallFailed, "undecodable patch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := hookTo("w.example.com", tc.url, tc.ca)
			h.TimeoutSeconds = &tc.timeout
			_, r, err := admit(t, Options{}, testPod(), config("c", h))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.Kind != tc.kind || e.Webhook != "w.example.com" || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("got %s %q: %s; want %s containing %q", e.Kind, e.Webhook, e.Message, tc.kind, tc.msg)
			}
			if tc.kind == Denied && e.Code != 403 {
				t.Errorf("code %d, want 403", e.Code)
			}
			if !r.Webhooks[0].Called || r.Webhooks[0].Error == "" {
				t.Errorf("report: %+v", r.Webhooks[0])
			}
			// failurePolicy Ignore lets the pod on, unchanged, except for a denial.
			h.FailurePolicy = ptr(admissionregistrationv1.Ignore)
			out, r, err := admit(t, Options{}, testPod(), config("c", h))
			if tc.kind == Denied {
				if err == nil {
					t.Errorf("a denial passed under failurePolicy Ignore")
				}
				return
			}
			if tc.kind == PatchFailed {
				// The API server does not fail open on a patch error either.
				if err == nil {
					t.Errorf("a bad patch passed under failurePolicy Ignore")
				}
				return
			}
			if err != nil {
				t.Fatalf("failurePolicy Ignore: %v", err)
			}
			if !r.Webhooks[0].FailedOpen || len(out.(*corev1.Pod).Spec.Volumes) != 0 {
				t.Errorf("failurePolicy Ignore report: %+v", r.Webhooks[0])
			}
		})
	}
}

func TestChainingAndReinvocation(t *testing.T) {
	ca := newTestCA(t)
	// first adds a volume for each label "vol-*" not yet having one;
	// second adds the label vol-b; with IfNeeded, first runs again.
	first := func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var p corev1.Pod
		if err := jsonUnmarshal(req.Object.Raw, &p); err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
		}
		have := map[string]bool{}
		for _, v := range p.Spec.Volumes {
			have[v.Name] = true
		}
		var ops []string
		if len(p.Spec.Volumes) == 0 {
			ops = append(ops, `{"op":"add","path":"/spec/volumes","value":[]}`)
		}
		for k := range p.Labels {
			if strings.HasPrefix(k, "vol-") && !have[k] {
				ops = append(ops, `{"op":"add","path":"/spec/volumes/-","value":{"name":"`+k+`","emptyDir":{}}}`)
			}
		}
		return patch("[" + strings.Join(ops, ",") + "]")(req)
	}
	srv, got := ca.serve(t, map[string]handlerFunc{
		"/first":  first,
		"/second": patch(`[{"op":"add","path":"/metadata/labels/vol-b","value":"x"}]`),
	})
	pod := testPod()
	pod.Labels["vol-a"] = "x"
	for _, policy := range []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy} {
		t.Run(string(policy), func(t *testing.T) {
			*got = nil
			h1 := hookTo("first.example.com", srv.URL+"/first", ca.caPEM)
			h1.ReinvocationPolicy = &policy
			h2 := hookTo("second.example.com", srv.URL+"/second", ca.caPEM)
			// Configurations are called in the order of their names.
			out, r, err := admit(t, Options{}, pod, config("b-second", h2), config("a-first", h1))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, v := range out.(*corev1.Pod).Spec.Volumes {
				names = append(names, v.Name)
			}
			var order []string
			for _, w := range r.Webhooks {
				order = append(order, w.Webhook+"@"+string(rune('0'+w.Round)))
			}
			wantVols, wantOrder := "vol-a", "first.example.com@0 second.example.com@0"
			if policy == admissionregistrationv1.IfNeededReinvocationPolicy {
				wantVols, wantOrder = "vol-a vol-b", "first.example.com@0 second.example.com@0 first.example.com@1"
			}
			if strings.Join(names, " ") != wantVols || strings.Join(order, " ") != wantOrder {
				t.Errorf("volumes %v, calls %v; want %s, %s", names, order, wantVols, wantOrder)
			}
		})
	}
}

func TestWarningsAuditAnnotationsDryRun(t *testing.T) {
	ca := newTestCA(t)
	var dry *bool
	srv, _ := ca.serve(t, map[string]handlerFunc{"/w": func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		dry = req.DryRun
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"image busybox has no tag"}, AuditAnnotations: map[string]string{"decision": "allowed"}}
	}})
	h := hookTo("w.example.com", srv.URL+"/w", ca.caPEM)
	_, r, err := admit(t, Options{DryRun: true, User: UserInfo{Name: "jane", Groups: []string{"dev"}}}, testPod(), config("c", h))
	if err != nil {
		t.Fatal(err)
	}
	w := r.Webhooks[0]
	if len(w.Warnings) != 1 || w.Warnings[0] != "image busybox has no tag" || w.AuditAnnotations["w.example.com/decision"] != "allowed" {
		t.Errorf("report: %+v", w)
	}
	if dry == nil || !*dry {
		t.Errorf("dryRun not sent")
	}
	h.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
	_, _, err = admit(t, Options{DryRun: true}, testPod(), config("c", h))
	if err == nil || !strings.Contains(err.Error(), "does not support dry run") {
		t.Errorf("dry run with side effects: %v", err)
	}
}

// TestOtherKinds: cluster-scoped objects match rules on their resource and
// every namespaceSelector; a namespace admitted first is matched as stored.
func TestOtherKinds(t *testing.T) {
	ca := newTestCA(t)
	srv, got := ca.serve(t, map[string]handlerFunc{"/label": patch(`[{"op":"add","path":"/metadata/labels","value":{"seen":"yes"}}]`)})
	labeler := hookTo("labeler.example.com", srv.URL+"/label", ca.caPEM)
	labeler.Rules[0].APIGroups = []string{"", "storage.k8s.io"}
	labeler.Rules[0].Resources = []string{"csidrivers", "namespaces"}
	selective := hookTo("selective.example.com", srv.URL+"/label", ca.caPEM)
	selective.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"seen": "yes"}}
	a, err := New(Options{}, []*admissionregistrationv1.MutatingWebhookConfiguration{config("a", labeler), config("b", selective)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	d, r, err := a.AdmitCreate(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d.example.com"}})
	if err != nil || d.(*storagev1.CSIDriver).Labels["seen"] != "yes" {
		t.Fatalf("CSIDriver: %v %+v", err, r.Webhooks)
	}
	if req := (*got)[0]; req.Resource.Group != "storage.k8s.io" || req.Resource.Resource != "csidrivers" || req.Namespace != "" {
		t.Errorf("request for a CSIDriver: %+v", req)
	}
	// The pod's namespace is not in the input: it is taken as existing,
	// without the label, and the selector does not match.
	_, r, _ = a.AdmitCreate(ctx, testPod())
	if r.Webhooks[1].Called || r.Webhooks[1].Skipped != `namespaceSelector does not match namespace "team-a"` {
		t.Errorf("pod in an unlabelled namespace: %+v", r.Webhooks[1])
	}
	// A namespace the labeler labelled on its creation: the pod in it matches.
	if _, r, err = a.AdmitCreate(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}); err != nil || !r.Webhooks[0].Called {
		t.Fatalf("namespace: %v %+v", err, r.Webhooks[0])
	}
	p := testPod()
	p.Namespace = "team-b"
	out, r, err := a.AdmitCreate(ctx, p)
	if err != nil || !r.Webhooks[1].Called || out.(*corev1.Pod).Labels["seen"] != "yes" {
		t.Errorf("pod in a namespace a webhook labelled: %v %+v", err, r.Webhooks[1])
	}
}

// refusedAddr is an address on 127.0.0.1 that refuses connections and that
// no other process can take while the test runs: a TCP port bound without
// listening (and without SO_REUSEADDR). A fixed port such as 1 is the
// machine's: another program may listen there.
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

package remote

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// The helper reads one Request per JSON value on its standard input and
// answers each with one Response on its standard output, in order.
const (
	OpValidate = "validate" // judge Configs as the API server does on create
	OpStart    = "start"    // build the webhook plugin over Configs and Options
	OpAdmit    = "admit"    // run the webhooks on the creation of Object
)

// Request is one thing asked of the helper.
type Request struct {
	Op       string                                                  `json:"op"`
	Configs  []*admissionregistrationv1.MutatingWebhookConfiguration `json:"configs,omitempty"`
	Options  *Options                                                `json:"options,omitempty"`
	Defaults *manifests.Defaults                                     `json:"defaults,omitempty"`
	Object   *Object                                                 `json:"object,omitempty"`
}

// Options say how the webhooks are reached and who asks.
type Options struct {
	// Services maps a webhook's clientConfig.service, "namespace/name" or
	// "namespace/name:port", to a host:port the webhook listens on.
	Services map[string]string `json:"services,omitempty"`
	User     UserInfo          `json:"user"`
	DryRun   bool              `json:"dryRun,omitempty"`
	// Namespaces are the input's Namespace objects.
	Namespaces []*corev1.Namespace `json:"namespaces,omitempty"`
}

// Object is an API object of one of Kinds, as JSON.
type Object struct {
	Kind string          `json:"kind"`
	Raw  json.RawMessage `json:"raw"`
}

// Response is the helper's answer to one Request.
type Response struct {
	// Invalid: for OpValidate, the field errors of each configuration, in
	// the order of the request.
	Invalid [][]string `json:"invalid,omitempty"`
	Object  *Object    `json:"object,omitempty"`
	Report  *Report    `json:"report,omitempty"`
	// Refused: the API server's admission refused the object.
	Refused *Error `json:"refused,omitempty"`
	// Err: the request itself failed.
	Err string `json:"err,omitempty"`
}

// EncodeObject wraps an object for the protocol.
func EncodeObject(obj runtime.Object) (*Object, error) {
	kind := KindOf(obj)
	if kind == "" {
		return nil, fmt.Errorf("admission: unsupported object %T", obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("admission: %s: %w", kind, err)
	}
	return &Object{Kind: kind, Raw: raw}, nil
}

// DecodeObject unwraps an object of the protocol.
func DecodeObject(o *Object) (runtime.Object, error) {
	if o == nil {
		return nil, fmt.Errorf("admission: no object")
	}
	obj, err := newObject(o.Kind)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(o.Raw, obj); err != nil {
		return nil, fmt.Errorf("admission: %s: %w", o.Kind, err)
	}
	return obj, nil
}

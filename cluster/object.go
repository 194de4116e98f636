package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Object is a Kubernetes object as JSON fields: the input's objects of any
// kind, custom resources included, as kubectl handles them.
type Object map[string]any

// ObjectFrom makes an Object of a typed object, with its apiVersion and
// kind (a typed object read from a manifest may lack them).
func ObjectFrom(obj any, apiVersion, kind string) (Object, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var o Object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	o["apiVersion"], o["kind"] = apiVersion, kind
	return o, nil
}

// ObjectFromJSON reads an Object.
func ObjectFromJSON(data []byte) (Object, error) {
	var o Object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	return o, nil
}

// Into decodes the object into a typed one.
func (o Object) Into(typed any) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, typed)
}

func (o Object) str(key string) string { s, _ := o[key].(string); return s }

func (o Object) meta() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// APIVersion, Kind, Name and Namespace are the object's.
func (o Object) APIVersion() string { return o.str("apiVersion") }
func (o Object) Kind() string       { return o.str("kind") }
func (o Object) Name() string       { s, _ := o.meta()["name"].(string); return s }
func (o Object) Namespace() string  { s, _ := o.meta()["namespace"].(string); return s }
func (o Object) UID() string        { s, _ := o.meta()["uid"].(string); return s }

// Group is the API group ("" for the core group).
func (o Object) Group() string {
	g, _, ok := strings.Cut(o.APIVersion(), "/")
	if !ok {
		return ""
	}
	return g
}

// Version is the API version without the group.
func (o Object) Version() string {
	v := o.APIVersion()
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		return v[i+1:]
	}
	return v
}

func (o Object) setNamespace(ns string) { o.meta()["namespace"] = ns }

// Key is namespace/name, or name.
func (o Object) Key() string {
	if o.Namespace() != "" {
		return o.Namespace() + "/" + o.Name()
	}
	return o.Name()
}

// nested returns the value at a path of map keys.
func (o Object) nested(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (o Object) String() string { return fmt.Sprintf("%s %s", o.Kind(), o.Key()) }

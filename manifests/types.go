package manifests

import "reflect"

// TypeOf is the apiVersion and kind of an object of a kind the loader
// reads (the Go type's name is the kind), or empty strings for any other.
func TypeOf(obj any) (apiVersion, kind string) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer {
		return "", ""
	}
	kind = t.Elem().Name()
	if v, ok := wantAPIVersion[kind]; ok && reflect.TypeOf(newObject(kind)) == t {
		return v, kind
	}
	return "", ""
}

// NewOf is an empty object of a kind the loader reads, at the apiVersion
// it is read at; nil for any other.
func NewOf(apiVersion, kind string) any {
	if v, ok := wantAPIVersion[kind]; !ok || v != apiVersion {
		return nil
	}
	return newObject(kind)
}

package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

// Serve is the helper's side of the remote protocol: it reads requests from
// in and writes one response each to out, until in ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	s := &server{}
	for {
		var req remote.Request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("admission helper: %w", err)
		}
		if err := enc.Encode(s.handle(ctx, &req)); err != nil {
			return fmt.Errorf("admission helper: %w", err)
		}
	}
}

type server struct{ a *Admitter }

func (s *server) handle(ctx context.Context, req *remote.Request) *remote.Response {
	switch req.Op {
	case remote.OpValidate:
		resp := &remote.Response{Invalid: make([][]string, len(req.Configs))}
		for i, c := range req.Configs {
			resp.Invalid[i] = []string{}
			for _, e := range ValidateConfiguration(c) {
				resp.Invalid[i] = append(resp.Invalid[i], e.Error())
			}
		}
		return resp
	case remote.OpStart:
		if req.Options == nil {
			return &remote.Response{Err: "admission helper: start without options"}
		}
		opts := Options{Services: req.Options.Services, User: req.Options.User, DryRun: req.Options.DryRun, Namespaces: req.Options.Namespaces}
		if d := req.Defaults; d != nil {
			opts.Default = func(obj runtime.Object) { _ = d.Apply(obj) }
		}
		a, err := New(opts, req.Configs)
		if err != nil {
			return &remote.Response{Err: err.Error()}
		}
		s.a = a
		return &remote.Response{}
	case remote.OpAdmit:
		return s.admit(ctx, req)
	}
	return &remote.Response{Err: fmt.Sprintf("admission helper: unknown op %q", req.Op)}
}

func (s *server) admit(ctx context.Context, req *remote.Request) *remote.Response {
	if s.a == nil {
		return &remote.Response{Err: "admission helper: admit before start"}
	}
	obj, err := remote.DecodeObject(req.Object)
	if err != nil {
		return &remote.Response{Err: err.Error()}
	}
	out, report, err := s.a.AdmitCreate(ctx, obj)
	resp := &remote.Response{Report: report}
	var refused *Error
	switch {
	case errors.As(err, &refused):
		resp.Refused = refused
	case err != nil:
		resp.Err = err.Error()
	default:
		if resp.Object, err = remote.EncodeObject(out); err != nil {
			resp.Err = err.Error()
		}
	}
	return resp
}

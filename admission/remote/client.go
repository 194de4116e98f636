package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// HelperName is the helper's executable.
const HelperName = "csi-kubelet-sim-admission"

// HelperEnv names the helper's path when it is neither beside the
// simulator's executable nor on $PATH.
const HelperEnv = "CSI_KUBELET_SIM_ADMISSION"

// HelperNotFoundError: no helper to run the webhooks with.
type HelperNotFoundError struct{ Looked []string }

func (e *HelperNotFoundError) Error() string {
	return fmt.Sprintf("the input has MutatingWebhookConfigurations, which run in the helper %s (the API server's webhook code), and it is not at %v nor on $PATH: `make install` installs it beside csi-kubelet-sim, or set $%s",
		HelperName, e.Looked, HelperEnv)
}

// HelperPath finds the helper: $CSI_KUBELET_SIM_ADMISSION, beside the
// running executable, then on $PATH.
func HelperPath() (string, error) {
	if p := os.Getenv(HelperEnv); p != "" {
		return p, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		looked = append(looked, p)
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", &HelperNotFoundError{Looked: looked}
}

// HelperError: the helper process failed (it died, or its answer could not
// be read): the environment's fault, not the input's.
type HelperError struct{ Err error }

func (e *HelperError) Error() string { return "admission helper: " + e.Err.Error() }
func (e *HelperError) Unwrap() error { return e.Err }

// Helper is a running helper process. Its calls are one at a time.
type Helper struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	enc  *json.Encoder
	dec  *json.Decoder
	dead error // set once a call failed the process
}

// Open starts the helper; verbose is the simulator's -v (from 3 on, the
// plugin's own log goes to stderr).
func Open(stderr io.Writer, verbose int) (*Helper, error) {
	path, err := HelperPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "-v", strconv.Itoa(verbose))
	cmd.Stderr = stderr
	// A process group of its own: a terminal's Ctrl-C, GNU timeout and CI
	// runners signal the simulator's whole group, and the helper must not
	// die under the simulator's feet (exit 3 instead of 130). The
	// simulator ends it (Close, or kill when a call is interrupted); if
	// the simulator dies, the helper reads the end of its input and exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("admission helper: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("admission helper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("admission helper %s: %w", path, err)
	}
	return &Helper{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(out)}, nil
}

// Close ends the helper and waits for it.
func (h *Helper) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = h.in.Close()
	if h.dead != nil {
		_ = h.cmd.Process.Kill()
	}
	_ = h.cmd.Wait()
}

// call sends one request and reads its answer. When ctx ends first, the
// helper is killed (a webhook call may be in flight) and ctx's error
// returned; the helper is then of no further use.
func (h *Helper) call(ctx context.Context, req *Request) (*Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != nil {
		return nil, h.dead
	}
	type answer struct {
		resp *Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		if err := h.enc.Encode(req); err != nil {
			done <- answer{err: err}
			return
		}
		var resp Response
		err := h.dec.Decode(&resp)
		done <- answer{&resp, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			h.dead = &HelperError{Err: a.err}
			return nil, h.dead
		}
		if a.resp.Err != "" {
			return a.resp, errors.New(a.resp.Err)
		}
		return a.resp, nil
	case <-ctx.Done():
		h.dead = ctx.Err()
		_ = h.cmd.Process.Kill()
		<-done
		return nil, ctx.Err()
	}
}

// Validate judges each configuration as the API server does on create:
// the field errors of each, in order (none: valid).
func (h *Helper) Validate(ctx context.Context, configs []*admissionregistrationv1.MutatingWebhookConfiguration) ([][]string, error) {
	resp, err := h.call(ctx, &Request{Op: OpValidate, Configs: configs})
	if err != nil {
		return nil, err
	}
	if len(resp.Invalid) != len(configs) {
		return nil, fmt.Errorf("admission helper: %d answers for %d configurations", len(resp.Invalid), len(configs))
	}
	return resp.Invalid, nil
}

// Start builds the API server's webhook plugin over the configurations
// (defaults applied); d are the API server's defaults of the release,
// applied after each patch.
func (h *Helper) Start(ctx context.Context, opts Options, d manifests.Defaults, configs []*admissionregistrationv1.MutatingWebhookConfiguration) error {
	_, err := h.call(ctx, &Request{Op: OpStart, Options: &opts, Defaults: &d, Configs: configs})
	return err
}

// AdmitCreate runs the mutating webhooks on the creation of obj and
// returns the object as the API server would store it, with the report.
// A refusal is an *Error.
func (h *Helper) AdmitCreate(ctx context.Context, obj runtime.Object) (runtime.Object, *Report, error) {
	o, err := EncodeObject(obj)
	if err != nil {
		return nil, nil, err
	}
	resp, err := h.call(ctx, &Request{Op: OpAdmit, Object: o})
	if err != nil {
		if resp != nil {
			return nil, resp.Report, err
		}
		return nil, nil, err
	}
	if resp.Refused != nil {
		return nil, resp.Report, resp.Refused
	}
	out, err := DecodeObject(resp.Object)
	if err != nil {
		return nil, resp.Report, err
	}
	return out, resp.Report, nil
}

// Package sidecars is what the cluster's CSI controllers do for a node's
// persistent volumes, around the simulated kubelet: the external-provisioner
// (provision.go, topology.go: a claim with a StorageClass and no volume gets
// CreateVolume and the PV the sidecar would create, bound to the claim; the
// volume deleted after the pods), and the external-attacher with the
// attach/detach controller (attach.go: the VolumeAttachment, with
// ControllerPublishVolume when the driver has it, and its publish_context).
// Every volume created and every attachment published is written down
// before the call and after it (record.go), so that `cleanup` can finish
// after a kill -9 (cleanup.go). The rules, with the sidecars' sources, are
// docs/kubelet.md §22 and §23.
package sidecars

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// Config is how the sidecars run.
type Config struct {
	Cluster *manifests.Cluster
	// Conn is the driver's controller socket (the node socket unless
	// --controller-endpoint); calls through it are recorded into Trace.
	Conn     grpc.ClientConnInterface
	Trace    *csiclient.Trace
	RootDir  string // the record goes under its .csi-kubelet-sim dir
	NodeName string
	// Timeout is the sidecars' --timeout for each call.
	Timeout time.Duration
	// ExtraCreateMetadata is the provisioner's --extra-create-metadata.
	ExtraCreateMetadata bool
	// KeepVolumes keeps the provisioned volumes (no DeleteVolume).
	KeepVolumes bool
	// Endpoint names the controller socket in the cleanup hint.
	Endpoint string
	// Replay: the claims were read from a live cluster. A claim is then
	// provisioned only under a VolumeNamePrefix of the run's own, never
	// as pvc-<claim uid>, the name the cluster's provisioner uses (a
	// driver answers CreateVolume of an existing name with that volume).
	Replay bool
	// VolumeNamePrefix replaces the provisioner's "pvc-" before the
	// claim's UID in the names of the volumes and PVs created.
	VolumeNamePrefix string
	// HoldersDir is the machine-wide register of provisioned volumes
	// (DefaultHoldersDir when empty): a volume another live run holds is
	// not deleted. NoHolders ("-") keeps none: plan, which calls no
	// driver.
	HoldersDir string
	// OnPV is told of each PV the provisioner creates.
	OnPV func(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume)
}

// NoHolders as HoldersDir keeps no register.
const NoHolders = "-"

// DefaultTimeout is the sidecars' default --timeout.
const DefaultTimeout = 10 * time.Second

// Volume is a volume the provisioner created, and what became of it.
type Volume struct {
	Claim   string // namespace/name
	PV      *corev1.PersistentVolume
	Handle  string
	Deleted bool
	// Kept: not deleted on purpose (--keep-volumes or reclaimPolicy
	// Retain); Left: a deletion that failed or was not attempted.
	Kept, Left bool
	// Request is the CreateVolume request (for tests and the summary).
	Request *csi.CreateVolumeRequest
}

// Controllers are the sidecars of one run. Prepare and Finish are called
// once each, from one goroutine, before and after the pods.
type Controllers struct {
	cfg      Config
	driver   string
	reg      *node.Registration
	caps     *driverCaps
	identity string
	record   *record

	mu       sync.Mutex
	volumes  []*Volume
	attached []*attachment
	// uncertain are CreateVolume calls that did not finish: the volume
	// may exist.
	uncertain []*csi.CreateVolumeRequest
	// holds are this run's entries in the register, by volume name.
	holds map[string]*hold
	// api is the API server the controllers write their objects to
	// (--apiserver); nil writes none.
	api APIWriter
}

// APIWriter is an API server the controllers keep their objects in, as
// the cluster's do: the provisioner's PV (and the PV controller's binding
// of the claim), the attach/detach controller's VolumeAttachment (and the
// attacher's status), and their deletion.
type APIWriter interface {
	// PVCreated creates the PV and binds the claim to it.
	PVCreated(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error
	// Attached creates the VolumeAttachment with its status.
	Attached(ctx context.Context, va *storagev1.VolumeAttachment) error
	// Detached deletes the VolumeAttachment.
	Detached(ctx context.Context, va *storagev1.VolumeAttachment) error
	// PVDeleted deletes the PV once its volume is deleted.
	PVDeleted(ctx context.Context, pv *corev1.PersistentVolume) error
}

// WriteTo has the controllers keep their objects in an API server.
func (c *Controllers) WriteTo(w APIWriter) { c.api = w }

var _ node.Controller = (*Controllers)(nil)

// New returns the sidecars of a run.
func New(cfg Config) *Controllers {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HoldersDir == "" {
		cfg.HoldersDir = DefaultHoldersDir()
	}
	cfg.Conn = &csiclient.Recorder{Next: cfg.Conn, Trace: cfg.Trace}
	return &Controllers{cfg: cfg, holds: map[string]*hold{}}
}

// InputError is a claim the sidecars cannot provision for a reason in the
// input (exit 2): it names the claim and where it was read.
type InputError struct {
	Claim string
	Err   error
}

func (e *InputError) Error() string { return fmt.Sprintf("claim %s: %v", e.Claim, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// IsInputError tells whether err comes from the input rather than the
// driver.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// Volumes are the volumes the provisioner created, in order.
func (c *Controllers) Volumes() []*Volume {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Volume(nil), c.volumes...)
}

// Prepare provisions every claim of the pods that waits for a volume of
// the registered driver, then attaches the volumes it provisioned.
func (c *Controllers) Prepare(ctx context.Context, reg *node.Registration, pods []*corev1.Pod) error {
	c.reg, c.driver = reg, reg.DriverName
	seen := map[string]bool{}
	for _, pod := range pods {
		for _, claim := range c.claimsToProvision(pod) {
			key := claim.Namespace + "/" + claim.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			v, err := c.provision(ctx, claim, pod)
			if err != nil {
				return err
			}
			if err := c.attach(ctx, v.PV); err != nil {
				return err
			}
		}
	}
	return nil
}

// claimsToProvision are the pod's claims with a StorageClass and no
// volume; the kubelet reports every other claim as it is.
func (c *Controllers) claimsToProvision(pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, ok := c.cfg.Cluster.PersistentVolumeClaim(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if !ok || claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
			continue
		}
		out = append(out, claim)
	}
	return out
}

// Finish detaches and deletes, newest first, what Prepare made, as the
// attach/detach controller and the provisioner do once the pods are gone
// and the claims deleted; a volume the kubelet still uses is left.
func (c *Controllers) Finish(ctx context.Context, inUse func(driver, handle string) bool) []error {
	var errs []error
	c.mu.Lock()
	vols := append([]*Volume(nil), c.volumes...)
	c.mu.Unlock()
	for i := len(vols) - 1; i >= 0; i-- {
		if err := c.release(ctx, vols[i], inUse); err != nil {
			errs = append(errs, err)
		}
	}
	for _, req := range c.uncertain {
		if err := c.settle(ctx, req); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && c.record != nil {
		c.record.remove()
	}
	c.mu.Lock()
	holds := c.holds
	c.holds = map[string]*hold{}
	c.mu.Unlock()
	for _, h := range holds {
		h.close()
	}
	return errs
}

// release detaches a volume and deletes it when its reclaim policy says
// so.
func (c *Controllers) release(ctx context.Context, v *Volume, inUse func(driver, handle string) bool) error {
	if v.Deleted {
		// Deleted already: a volume the provisioner could not use.
		return nil
	}
	if inUse != nil && inUse(c.driver, v.Handle) {
		v.Left = true
		return fmt.Errorf("volume %s of claim %s is still in use on the node after the teardown: not detached, not deleted; left on the driver: handle %s%s", v.PV.Name, v.Claim, v.Handle, c.hint())
	}
	if err := c.detach(ctx, v.PV); err != nil {
		v.Left = true
		return fmt.Errorf("%w; volume %s of claim %s not deleted: handle %s left on the driver%s", err, v.PV.Name, v.Claim, v.Handle, c.hint())
	}
	return c.delete(ctx, v)
}

// hint is how to finish what is left.
func (c *Controllers) hint() string {
	ep := c.cfg.Endpoint
	if ep == "" {
		ep = "<the driver's socket>"
	}
	return fmt.Sprintf(" (csi-kubelet-sim cleanup --root-dir %s --endpoint %s deletes it)", c.cfg.RootDir, ep)
}

// callContext is one sidecar call's context: the sidecar's --timeout,
// labelled for the trace.
func (c *Controllers) callContext(ctx context.Context, component, operation, volume string) (context.Context, context.CancelFunc) {
	return context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: component, Operation: operation, Volume: volume}), c.cfg.Timeout)
}

// attachRequired is the kubelet's and the attach/detach controller's
// rule (docs/kubelet.md §10): attach unless a CSIDriver says
// attachRequired: false.
func attachRequired(cl *manifests.Cluster, driver string) bool {
	d, ok := cl.CSIDriver(driver)
	if !ok {
		return true
	}
	return d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// class returns the claim's StorageClass.
func (c *Controllers) class(claim *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := *claim.Spec.StorageClassName
	sc, ok := c.cfg.Cluster.StorageClass(name)
	if !ok {
		return nil, c.inputErr(claim, fmt.Errorf("spec.storageClassName: storageclass.storage.k8s.io %q not found", name))
	}
	return sc, nil
}

func (c *Controllers) inputErr(claim *corev1.PersistentVolumeClaim, err error) error {
	src := c.cfg.Cluster.SourceOf("PersistentVolumeClaim", claim.Namespace, claim.Name)
	return &InputError{Claim: fmt.Sprintf("%s/%s (%s)", claim.Namespace, claim.Name, src), Err: err}
}

// settle deletes a volume whose CreateVolume did not finish, as the
// provisioner does when it retries for a claim that is gone: the same
// request again (CSI makes it idempotent by name), then DeleteVolume.
func (c *Controllers) settle(ctx context.Context, req *csi.CreateVolumeRequest) error {
	cctx, cancel := c.callContext(ctx, "provision", "Provision", req.Name)
	resp, err := csi.NewControllerClient(c.cfg.Conn).CreateVolume(cctx, req)
	cancel()
	if err != nil {
		return fmt.Errorf("external-provisioner: volume %s: CreateVolume did not finish and asking again failed: %w; the volume may be left on the driver%s", req.Name, err, c.hint())
	}
	v := &Volume{Claim: "(gone)", Handle: resp.GetVolume().GetVolumeId(), Request: req,
		PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: req.Name}}}
	if err := c.deleteVolume(ctx, v, req.Secrets); err != nil {
		return fmt.Errorf("external-provisioner: DeleteVolume %s: %w; the volume is left on the driver: handle %s%s", req.Name, err, v.Handle, c.hint())
	}
	return nil
}

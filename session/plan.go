package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

type PlanOptions struct {
	CommonOptions
	Streams
	DriverName   string
	NodeID       string
	Capabilities []string
	// ControllerCapabilities are the controller's, for the provisioner
	// and attacher of claims with a StorageClass.
	ControllerCapabilities []string
	Topology               map[string]string
	MaxVolumes             int64
	Report                 string

	caps     []csi.NodeServiceCapability_RPC_Type
	ctrlCaps []csi.ControllerServiceCapability_RPC_Type
}

// run prints the requests a kubelet would send, answering for the
// driver from the flags. It runs the same kubelet code as `run`.
func (o *PlanOptions) Run(ctx context.Context) error {
	s := o.Streams
	if err := o.completeInput(ctx, s, o.tell().Warning); err != nil {
		return err
	}
	if o.DriverName == "" {
		o.DriverName = o.guessDriver()
	}
	if o.DriverName == "" {
		return WithCode(ExitUsage, fmt.Errorf("plan: --driver-name is needed when the manifests name no CSI driver"))
	}
	if err := manifests.ValidateDriverName(o.DriverName, field.NewPath("--driver-name")); err != nil {
		return WithCode(ExitUsage, err)
	}
	if o.NodeID == "" {
		o.NodeID = o.NodeName
	}
	createdDirs, err := o.prepareRootDir()
	if err != nil {
		return err
	}
	conn := &csiclient.Planned{
		DriverName: o.DriverName, VendorVersion: "planned", NodeID: o.NodeID,
		MaxVolumesPerNode: o.MaxVolumes, Topology: o.Topology, Capabilities: o.caps,
		ControllerCapabilities: o.ctrlCaps,
	}
	ss := newSession("plan", &o.CommonOptions, s, conn, true, createdDirs)
	page := newReportPage(ss, o.Report)
	plan := ss.plan(ctx, 0, node.RunningSchedule{})
	// The same provisioner and attacher as `run`, answered by the plan.
	plan.Controller = plannedSidecars(ss, conn)
	plan.ProvisionDefault = ss.provisionDefault(false)
	out := ss.lifecycle(ctx, plan)
	exit := ss.exitErr(out)
	hdr := ss.reportHeader(out, exit)
	hdr.Endpoint = "none (planned: the driver's answers come from the flags)"
	if err := page.write(fmt.Sprintf("csi-kubelet-sim plan: %s, %s", plural(out.Pods, "pod"), o.Release.Describe()), hdr); err != nil && exit == nil {
		exit = WithCode(ExitEnvironment, err)
	}
	ss.summary(out, exit)
	return exit
}

// complete takes the files of the arguments and the root dir.
func (o *PlanOptions) Complete(args []string) error {
	o.Filenames = FilesFrom(o.Filenames, args)
	return o.completeRootDir()
}

// validate reads the driver's answers from the flags.
func (o *PlanOptions) Validate() error {
	var err error
	if o.caps, err = csiclient.ParseCapabilities(o.Capabilities); err != nil {
		return WithCode(ExitUsage, fmt.Errorf("--node-capabilities: %w", err))
	}
	if o.ctrlCaps, err = csiclient.ParseControllerCapabilities(o.ControllerCapabilities); err != nil {
		return WithCode(ExitUsage, fmt.Errorf("--controller-capabilities: %w", err))
	}
	return nil
}

// guessDriver picks the driver the manifests are about.
func (o *PlanOptions) guessDriver() string {
	if ds := o.cluster.CSIDrivers(); len(ds) == 1 {
		return ds[0].Name
	}
	for _, p := range o.cluster.Pods() {
		for _, v := range p.Spec.Volumes {
			if v.CSI != nil {
				return strings.TrimSpace(v.CSI.Driver)
			}
			if v.PersistentVolumeClaim != nil {
				if d := o.claimDriver(p.Namespace, v.PersistentVolumeClaim.ClaimName); d != "" {
					return d
				}
			}
		}
	}
	return ""
}

// claimDriver is the driver of a claim's PV, or of its StorageClass's
// provisioner when it has none yet (the provisioner makes it).
func (o *PlanOptions) claimDriver(namespace, name string) string {
	pvc, ok := o.cluster.PersistentVolumeClaim(namespace, name)
	if !ok {
		return ""
	}
	if pv, ok := o.cluster.PersistentVolume(pvc.Spec.VolumeName); ok && pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	if pvc.Spec.VolumeName == "" && pvc.Spec.StorageClassName != nil {
		if sc, ok := o.cluster.StorageClass(*pvc.Spec.StorageClassName); ok {
			return sc.Provisioner
		}
	}
	return ""
}

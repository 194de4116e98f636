package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

type planOptions struct {
	commonOptions
	streams
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

const planLong = `Print the requests a kubelet would send a CSI driver for the pods of the
manifests, with no driver at all: the driver's answers come from the flags
(--driver-name, --node-capabilities, --controller-capabilities, --node-id,
--topology). It runs the same kubelet code as run, so the paths,
volume_context, secrets and tokens are the ones run would send; a claim with
a StorageClass and no PV is provisioned and attached as run does it.

Manifests come from -f and from the arguments; without a Pod the default pod
is used, and the trace says so: its persistent volume is provisioned when
--controller-capabilities has CREATE_DELETE_VOLUME (the default), as run does
against a driver that offers it.`

const planExample = `  # what a staging driver would get for these manifests
  csi-kubelet-sim plan -f manifests/ --node-capabilities STAGE_UNSTAGE_VOLUME,SINGLE_NODE_MULTI_WRITER

  # a driver without a CSIDriver object in the manifests, as the kubelet of 1.31
  csi-kubelet-sim plan -f pod.yaml --driver-name my.csi.example.com --kubelet-version 1.31`

func newPlanCommand(s streams) *cobra.Command {
	o := &planOptions{streams: s}
	c := newCommandFor(addPlanFlags, o, &cobra.Command{
		Use:     "plan [-f FILE]... [--node-capabilities CAP,...] [flags] [FILE...]",
		Short:   "Print the requests a kubelet would send, with no driver needed",
		Long:    planLong,
		Example: planExample,
	})
	markFilenameFlag(c)
	return c
}

// run prints the requests a kubelet would send, answering for the
// driver from the flags. It runs the same kubelet code as `run`.
func (o *planOptions) run(ctx context.Context) error {
	s := o.streams
	if err := o.completeInput(ctx, s, warnTo(s)); err != nil {
		return err
	}
	if o.DriverName == "" {
		o.DriverName = o.guessDriver()
	}
	if o.DriverName == "" {
		return withCode(exitUsage, fmt.Errorf("plan: --driver-name is needed when the manifests name no CSI driver"))
	}
	if err := manifests.ValidateDriverName(o.DriverName, field.NewPath("--driver-name")); err != nil {
		return withCode(exitUsage, err)
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
	ss := newSession("plan", &o.commonOptions, s, conn, true, createdDirs)
	page := newReportPage(ss, o.Report)
	plan := ss.plan(ctx, 0, node.RunningSchedule{})
	// The same provisioner and attacher as `run`, answered by the plan.
	plan.Controller = plannedSidecars(ss, conn)
	plan.ProvisionDefault = ss.provisionDefault(false)
	out := ss.lifecycle(ctx, plan)
	exit := ss.exitErr(out)
	hdr := ss.reportHeader(out, exit)
	hdr.Endpoint = "none (planned: the driver's answers come from the flags)"
	if err := page.write(fmt.Sprintf("csi-kubelet-sim plan: %s, %s", plural(out.Pods, "pod"), o.release.Describe()), hdr); err != nil && exit == nil {
		exit = withCode(exitEnvironment, err)
	}
	ss.summary(out, exit)
	return exit
}

// complete takes the files of the arguments and the root dir.
func (o *planOptions) complete(args []string) error {
	o.Filenames = filesFrom(o.Filenames, args)
	return o.completeRootDir()
}

// validate reads the driver's answers from the flags.
func (o *planOptions) validate() error {
	var err error
	if o.caps, err = csiclient.ParseCapabilities(o.Capabilities); err != nil {
		return withCode(exitUsage, fmt.Errorf("--node-capabilities: %w", err))
	}
	if o.ctrlCaps, err = csiclient.ParseControllerCapabilities(o.ControllerCapabilities); err != nil {
		return withCode(exitUsage, fmt.Errorf("--controller-capabilities: %w", err))
	}
	return nil
}

// guessDriver picks the driver the manifests are about.
func (o *planOptions) guessDriver() string {
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
func (o *planOptions) claimDriver(namespace, name string) string {
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

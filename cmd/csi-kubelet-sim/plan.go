package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

type planOptions struct {
	commonOptions
	DriverName   string
	NodeID       string
	Capabilities []string
	Topology     map[string]string
	MaxVolumes   int64
}

// runPlan prints the requests a kubelet would send, answering for the
// driver from the flags. It runs the same kubelet code as `run`.
func runPlan(ctx context.Context, args []string, s streams) error {
	o := &planOptions{}
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	fs.SetOutput(s.Err)
	o.addFlags(fs)
	fs.StringVar(&o.DriverName, "driver-name", "", "the name the driver reports (default: the CSIDriver in the manifests, else the first CSI volume's driver)")
	fs.StringVar(&o.NodeID, "node-id", "", "the node ID the driver reports in NodeGetInfo (default: the node name)")
	fs.StringSliceVar(&o.Capabilities, "node-capabilities", []string{"STAGE_UNSTAGE_VOLUME"}, "node capabilities the driver reports")
	fs.StringToStringVar(&o.Topology, "topology", nil, "accessible topology segments the driver reports, key=value,...")
	fs.Int64Var(&o.MaxVolumes, "max-volumes-per-node", 0, "max_volumes_per_node the driver reports")
	if err := fs.Parse(args); err != nil {
		return withCode(exitUsage, err)
	}
	if fs.NArg() > 0 {
		return withCode(exitUsage, fmt.Errorf("plan: unexpected arguments %v", fs.Args()))
	}
	caps, err := csiclient.ParseCapabilities(o.Capabilities)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--node-capabilities: %w", err))
	}
	if o.RootDir != "" {
		if o.RootDir, err = filepath.Abs(o.RootDir); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if err := o.complete(s, warnTo(s)); err != nil {
		return err
	}
	if o.DriverName == "" {
		o.DriverName = o.guessDriver()
	}
	if o.DriverName == "" {
		return withCode(exitUsage, fmt.Errorf("plan: --driver-name is needed when the manifests name no CSI driver"))
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
		MaxVolumesPerNode: o.MaxVolumes, Topology: o.Topology, Capabilities: caps,
	}
	ss := newSession("plan", &o.commonOptions, s, conn, true, createdDirs)
	out := ss.lifecycle(ctx, func(context.Context) {})
	exit := ss.exitErr(out)
	ss.summary(out, exit)
	return exit
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
				if pvc, ok := o.cluster.PersistentVolumeClaim(p.Namespace, v.PersistentVolumeClaim.ClaimName); ok {
					if pv, ok := o.cluster.PersistentVolume(pvc.Spec.VolumeName); ok && pv.Spec.CSI != nil {
						return pv.Spec.CSI.Driver
					}
				}
			}
		}
	}
	return ""
}

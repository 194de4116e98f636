package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const cleanupLong = `Finish what interrupted runs left under a root dir, as a kubelet does after a
restart: the volumes the runs' journals list are reconstructed and torn down
through the driver (NodeUnpublishVolume, NodeUnstageVolume), then their
directories removed; then the volumes the runs' provisioner and attacher
recorded are unpublished (ControllerUnpublishVolume) and deleted
(DeleteVolume). Only what the journals and records list is touched; a root
dir without either is left alone.

Without the driver's socket, what needs no driver is finished (the control
plane of an --apiserver run, the directories of a run killed before it
mounted anything) and what needs it is named (exit 3).

When the driver refuses (NotFound: it no longer knows the volume), cleanup
exits 1 and keeps everything; --force then unmounts and removes the targets
and staging paths the journal recorded (only those, unmounted first and
checked in mountinfo before anything under them is removed) and drops the
controller records, saying so line by line.`

const cleanupExample = `  # after a run interrupted twice (its error names this command)
  csi-kubelet-sim cleanup --root-dir /var/lib/kubelet-sim --endpoint unix:///run/csi/csi.sock

  # the driver no longer knows the volume (its error names this command)
  csi-kubelet-sim cleanup --force --root-dir /var/lib/kubelet-sim --endpoint unix:///run/csi/csi.sock`

func newCleanupCommand(s session.Streams) *cobra.Command {
	o := &session.CleanupOptions{Streams: s}
	c := newCommandFor(func(_ sessionCommand, fs *pflag.FlagSet) { addCleanupFlags(o, fs) }, sessionCommand{o, &o.CommonOptions, s}, &cobra.Command{
		Use:     "cleanup --root-dir DIR --endpoint unix:///PATH [flags]",
		Short:   "Finish an interrupted run: its volumes reconstructed and torn down through the driver",
		Long:    cleanupLong,
		Example: cleanupExample,
		Args:    noArgs,
	})
	_ = c.MarkFlagDirname("root-dir")
	return c
}

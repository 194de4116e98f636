// Package conformance checks a CSI driver against what a kubelet needs of
// it. From the CSIDriver object (or, without one, from the driver's own
// capabilities) it derives the scenarios that matter for that driver and
// runs each one through the simulated kubelet (package node) against the
// live driver: every lifecycle mode the object allows, pod info, tokens,
// republish, the SELinux mount option, volume_mount_group, attach and
// publish_context, and the node-side CSI rules the kubelet relies on
// (idempotent calls, NodeUnpublishVolume removing the target,
// InvalidArgument for missing fields, topology valid as Node labels, no
// call near the kubelet's timeout).
//
// Every scenario has its own kubelet root dir and its own cluster objects,
// and tears down and cleans up after itself even when it fails; what it
// leaves mounted is a failure of its own. A failure says what the driver
// did, what the kubelet needed, and the section of docs/kubelet.md
// the rule comes from.
package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// DefaultVolumeHandle is the volume handle of the pre-provisioned
// PersistentVolume when --volume-handle is not given and the driver cannot
// create volumes.
const DefaultVolumeHandle = "csi-kubelet-sim-conformance"

// timeRound rounds durations in messages.
const timeRound = 10 * time.Microsecond

// Status is a scenario's outcome.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of one scenario.
type Result struct {
	Name     string
	Status   Status
	Duration time.Duration
	// Message is, for a failure, every failure on its own line; for a
	// skip, the reason.
	Message string
	// Failures are the failures one by one.
	Failures []Failure
	// Notes are what a person may want to know even when it passed (the
	// target was not a mount point, the file survived, ...).
	Notes []string
	// Calls is how many calls the scenario made to the driver, and
	// CallTime how long they took together.
	Calls    int
	CallTime time.Duration
	// KubeletSpecific: the scenario checks something only a kubelet (not
	// the CSI spec alone) asks of the driver.
	KubeletSpecific bool
}

// Failure is one thing the driver got wrong: what it did, what the kubelet
// needed, and the docs/kubelet.md section that says so.
type Failure struct {
	Did     string
	Needed  string
	Section string
}

func (f Failure) String() string {
	s := f.Did
	if f.Needed != "" {
		s += "; " + f.Needed
	}
	if f.Section != "" {
		s += " (docs/kubelet.md §" + f.Section + ")"
	}
	return s
}

// Volume says which persistent volume the scenarios used.
type Volume struct {
	Handle string
	// Attributes are the PV's volumeAttributes.
	Attributes map[string]string
	// Created: made by CreateVolume (1Gi) for the run and deleted at the
	// end; otherwise pre-provisioned (--volume-handle, or the default).
	Created bool
	Name    string // the CreateVolume name
	Size    string // the CreateVolume size ("": 1Gi)
	// Err is a failed CreateVolume or DeleteVolume.
	Err error
	// Extra counts the further volumes CreateVolume made (and DeleteVolume
	// deleted) so that scenarios could run side by side.
	Extra int
}

// Describe says in one line where the volume came from.
func (v *Volume) Describe() string {
	if v == nil {
		return "none needed"
	}
	if v.Created {
		more := ""
		if v.Extra > 0 {
			more = fmt.Sprintf("; %d more like it for scenarios running side by side", v.Extra)
		}
		size := v.Size
		if size == "" {
			size = volumeSize
		}
		return fmt.Sprintf("created by CreateVolume (name %s, %s) as %q, deleted with DeleteVolume at the end%s", v.Name, size, v.Handle, more)
	}
	if v.Handle == "" {
		return "none"
	}
	return fmt.Sprintf("pre-provisioned, handle %q (no CreateVolume)", v.Handle)
}

// Report is the outcome of a conformance run.
type Report struct {
	Driver *DriverInfo
	// CSIDriver is the object the scenarios used; nil: none was given and
	// the kubelet behaves as without one.
	CSIDriver *storagev1.CSIDriver
	Volume    *Volume
	Results   []Result
	// NotSelected counts the scenarios --focus/--skip left out.
	NotSelected int
	Started     time.Time
	Duration    time.Duration
	Interrupted bool
	// Abandoned: a second interrupt cancelled the teardown of the running
	// scenarios; what they made is left for `cleanup` under the root dir.
	Abandoned bool
	// Redactor keeps the run's secrets out of what quotes the driver
	// (Config.Sensitive); its Text and TextLines escape for printing.
	Redactor csiclient.Redactor
	// Calls counts every call made to the driver, CallTime their time.
	Calls    int
	CallTime time.Duration
	// ScenarioCalls are the calls each scenario made (and the probe's,
	// under "probe"), for the HTML report.
	ScenarioCalls map[string][]csiclient.Call
}

// Counts returns how many scenarios passed, failed and were skipped.
func (r *Report) Counts() (pass, fail, skip int) {
	for _, res := range r.Results {
		switch res.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
	}
	return pass, fail, skip
}

// CallCount is how many calls the run made to the driver, and how long
// they took: the probe, CreateVolume and DeleteVolume, and every
// scenario's, so that it agrees with what the driver received.
func (r *Report) CallCount() (int, time.Duration) { return r.Calls, r.CallTime }

// Failed tells whether the run failed: a scenario failed, or the volume
// could not be created or deleted.
func (r *Report) Failed() bool {
	_, fail, _ := r.Counts()
	return fail > 0 || (r.Volume != nil && r.Volume.Err != nil)
}

// Host is what the conformance host offers.
type Host struct {
	// SELinux: the host has SELinux (/sys/fs/selinux exists), so a
	// context= mount option can take effect.
	SELinux bool
}

// Config configures a run.
type Config struct {
	// Conn reaches the driver; csiclient.Dialer makes a new connection per
	// call, as the kubelet does.
	Conn grpc.ClientConnInterface
	// CSIDriver is the object for the driver (defaults applied); nil when
	// none was given.
	CSIDriver *storagev1.CSIDriver
	// VolumeHandle of the pre-provisioned PV; empty: a volume made by
	// CreateVolume when the driver has CREATE_DELETE_VOLUME, else
	// DefaultVolumeHandle.
	VolumeHandle string
	// VolumeAttributes are the PV's and the inline volume's
	// volumeAttributes.
	VolumeAttributes map[string]string
	// InlineReadOnly makes the scenarios' inline volumes readOnly: true
	// (csi.readOnly, --read-only): the kubelet then publishes them with
	// readonly set (docs/kubelet.md §8), which drivers such as the
	// secrets-store CSI driver require.
	InlineReadOnly bool
	// InlineAttributes are the inline volumes' volumeAttributes; nil:
	// VolumeAttributes.
	InlineAttributes map[string]string
	// TestDriver is Kubernetes' external storage test driver definition
	// (--testdriver), read from TestDriverFile: its declarations are
	// checked against the driver (the testdriver/declarations scenario).
	// Nil: none.
	TestDriver     *testdriver.Definition
	TestDriverFile string
	// Class parameterizes the PersistentVolume as a StorageClass would
	// (--testdriver's StorageClass.FromFile and DriverInfo); nil: 1Gi,
	// no parameters, no fsType, no mount options.
	Class *VolumeClass
	// Focus and Skip select scenarios by name (nil: all, none).
	Focus, Skip *regexp.Regexp
	// Timeout is the kubelet's per-operation timeout (csiTimeout, 2m).
	Timeout time.Duration
	// Parallel bounds the scenarios running at once; 0 is
	// DefaultParallel, 1 runs them one after another.
	Parallel int
	// Release is the kubelet release and its gates (zero: the newest with
	// its defaults). The CSIDriver should have been loaded with
	// Release.APIServerDefaults(), so that it holds what that release's API
	// server would store.
	Release node.Release
	// RootDir is an existing directory; each scenario gets its own kubelet
	// root dir inside it, removed after the scenario.
	RootDir  string
	NodeName string
	Host     Host
	// Sink, when set, is given the trace of each scenario (for -v).
	Sink func(scenario string) csiclient.Sink
	// Admit runs the API server's mutating admission on a scenario's pod
	// before the kubelet sees it (the input's MutatingWebhookConfigurations)
	// and returns the pod as stored; nil: no admission.
	Admit func(pod *corev1.Pod) (*corev1.Pod, error)
	// OnStart and OnResult are called around each scenario that runs;
	// OnResult for skipped ones too.
	OnStart  func(Scenario)
	OnResult func(Result)
	// Teardown is the context the running scenarios are torn down with
	// after ctx ended (the first Ctrl-C); cancelling it (a second Ctrl-C)
	// abandons their teardown and leaves what they made for `cleanup`.
	// Nil: the teardown cannot be abandoned.
	Teardown context.Context
	// Sensitive collects the secrets of every request of the run (every
	// trace gets it first), for Report.Redactor; nil: none collected.
	Sensitive *csiclient.Sensitive
	// Input holds the objects given besides the CSIDriver: the scenarios'
	// pods' ServiceAccount (default/default) and the Node named NodeName
	// reach every scenario's objects, where the kubelet's token path reads
	// their UIDs, as `run` reads its input's. Nil: none.
	Input *manifests.Cluster
	// APIServer, when set, is a real API server around the scenarios
	// (--apiserver): each scenario's objects go through it, its tokens
	// come from its TokenRequest API. The scenarios then run one at a
	// time: they share the objects' names (the PV's is the spec name in
	// every target path).
	APIServer APIServer
}

// VolumeClass is what a StorageClass and the test driver definition say
// of the run's PersistentVolumes.
type VolumeClass struct {
	// Parameters are CreateVolume's: the class's, without the
	// external-provisioner's own csi.storage.k8s.io/ keys.
	Parameters map[string]string
	// FsType is the PV's spec.csi.fsType, and the fs_type of the
	// capability of CreateVolume and ControllerPublishVolume.
	FsType string
	// MountOptions are the PV's mountOptions: the kubelet's mount_flags.
	MountOptions []string
	// Size is CreateVolume's required bytes and the PV's capacity; zero:
	// 1Gi.
	Size resource.Quantity
}

// size is the volumes' size.
func (c *VolumeClass) size() resource.Quantity {
	if c == nil || c.Size.IsZero() {
		return resource.MustParse(volumeSize)
	}
	return c.Size
}

// slug turns a scenario name into a directory name.
func slug(name string) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(name)
}

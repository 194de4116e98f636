package session

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// Observer sees a session of the kubelet (run, plan, load, cleanup) as it
// goes. The command's printer is one (printers.Session): the engine hands
// it what happened as data and writes nothing of the user's itself. Nil
// in CommonOptions.Printer: nothing is printed.
type Observer interface {
	Notices
	// Begin comes once the run's secrets are known, before any call.
	Begin(Begin) Printing
	// Announce is a note before the kubelet starts (the default pod, the
	// control plane, the OIDC server).
	Announce(msg string)
	// Header comes as the kubelet starts.
	Header(Header)
	// PersistentVolume is one the provisioner made for a claim.
	PersistentVolume(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume)
	// APIServer is what the driver asked the run's API server.
	APIServer(APIServerRequests)
	// Summary is what the session did, once it is over.
	Summary(*Summary)
	// NothingToDo: `cleanup` found nothing of the simulator's to finish.
	NothingToDo(NothingToDo)
	// LoadProgress is `load`'s live line of counts; nil: none.
	LoadProgress() *loadreport.Progress
}

// Notices are what the engine tells the user beside a command's output
// (the command prints them on stderr): warnings on the input, notes on
// the root dir, --apiserver's wait for the driver.
type Notices interface {
	Warning(msg string)
	Note(msg string)
	WaitingForDriver(DriverWait)
}

// DriverWait: the run's API server is up and the driver's socket is not
// there yet; the driver starts once its kubeconfig exists.
type DriverWait = controlplane.DriverWait

// NothingToDo is a `cleanup` that found nothing to finish.
type NothingToDo struct {
	RootDir string
	Missing bool // the root dir does not exist; else it holds no journal
}

// Begin is what an observer needs to know before the first call.
type Begin struct {
	Redactor csiclient.Redactor // the run's secrets, kept out of every output
	Planned  bool               // `plan`: the driver's answers are the flags'
	// PrintCalls is false when the calls are counted but not shown
	// (`load` without -v).
	PrintCalls bool
	Verbose    bool
}

// Printing is how an observer takes the live trace.
type Printing struct {
	// Calls sees every call and step as it happens; nil: none.
	Calls csiclient.Sink
	// Tokens takes a record of each token handed to the driver; nil:
	// none.
	Tokens interface{ Object(any) }
}

// Header is the session's opening: which kubelet, where.
type Header struct {
	Command    string
	Release    node.Release
	NodeName   string
	RootDir    string
	OwnedRoot  bool   // made for the run, removed afterwards
	SELinuxWhy string // the host's SELinux, and why it is so
	PrintCalls bool
}

// APIServerRequests are the driver's requests to the run's API server.
type APIServerRequests = controlplane.DriverRequests

// Summary is what a session did.
type Summary struct {
	Command string
	Outcome *node.Outcome
	Running node.RunningReport
	// Calls to the driver, how many failed, the time spent in the driver,
	// and in all.
	Calls, FailedCalls  int
	DriverTime, Elapsed time.Duration
	// Provisioned are the volumes of the run's sidecars; nil when the
	// command has none.
	Provisioned []*sidecars.Volume
	HasSidecars bool
	Release     node.Release
	SELinux     SELinuxHost
	RootDir     string
	// SyncFrequency is run's --sync-frequency.
	SyncFrequency time.Duration
	// Load is `load`'s report; nil for the other commands.
	Load *loadreport.Summary
	// Exit is the session's error, with its exit code.
	Exit error
}

// noNotices drops the notices of a Go caller that gave no observer.
type noNotices struct{}

func (noNotices) Warning(string)              {}
func (noNotices) Note(string)                 {}
func (noNotices) WaitingForDriver(DriverWait) {}

// noObserver is the observer of a Go caller that gave none.
type noObserver struct{ noNotices }

func (noObserver) NothingToDo(NothingToDo)            {}
func (noObserver) LoadProgress() *loadreport.Progress { return nil }

func (noObserver) Begin(Begin) Printing                                                     { return Printing{} }
func (noObserver) Announce(string)                                                          {}
func (noObserver) Header(Header)                                                            {}
func (noObserver) PersistentVolume(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {}
func (noObserver) APIServer(APIServerRequests)                                              {}
func (noObserver) Summary(*Summary)                                                         {}

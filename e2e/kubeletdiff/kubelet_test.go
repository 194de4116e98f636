package kubeletdiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/volume"
	kubeletcsi "k8s.io/kubernetes/pkg/volume/csi"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
	"k8s.io/kubernetes/pkg/volume/util/volumepathhandler"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// The kubelet's loop periods (volume_manager.go: reconcilerLoopSleepPeriod,
// desiredStateOfWorldPopulatorLoopSleepPeriod).
const loopPeriod = 100 * time.Millisecond

// How long the harness waits for the kubelet code to reach a state: every
// case succeeds in well under a second, so reaching this is a failure.
const defaultPhaseTimeout = 20 * time.Second

// quiet is how long the driver must have heard nothing before a phase
// counts as over, so that no late call of one phase lands in the next.
const quiet = 300 * time.Millisecond

// FakeToken is the service-account token the harness's API server hands
// out: JWT-shaped ({"alg":"RS256","kid":"fake"}.{"fake":true}.signature), so
// that the comparison can check the simulator's tokens by shape.
const FakeToken = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImZha2UifQ.eyJmYWtlIjp0cnVlfQ.ZmFrZS1zaWduYXR1cmU"

// kubeletRun is one pod's life on a node run by the kubelet's own code: the
// CSI volume plugin (k8s.io/kubernetes/pkg/volume/csi) on the fake volume
// host, registered through its plugin registration handler, driven by the
// kubelet volume manager's own parts (desired and actual state of world,
// the populator, the reconciler, the operation executor and generator)
// exactly as volumemanager.NewVolumeManager wires them, except for the
// SELinux label translator (the fake one of pkg/volume/util: this host has
// SELinux disabled, and a real node's MCS level is random anyway).
//
// The harness plays the parts that are not the kubelet's volume code: the
// API server (a fake clientset holding the objects, issuing FakeToken), the
// node-driver-registrar (GetPluginInfo, then the plugin watcher's
// ValidatePlugin and RegisterPlugin), the pod worker (a pod appears, is
// synced, is deleted), the node status loop (volumes in use reported) and
// the stats provider (GetMetrics on the mounted volumes).
type kubeletRun struct {
	t        *testing.T
	in       *input
	rec      *recorder.Recorder
	root     string
	socket   string
	events   *record.FakeRecorder
	client   *fake.Clientset
	mgr      *volume.VolumePluginMgr
	dsw      cache.DesiredStateOfWorld
	asw      cache.ActualStateOfWorld
	dswp     populator.DesiredStateOfWorldPopulator
	pods     *podSource
	podName  volumetypes.UniquePodName
	expected []string
}

func runKubelet(t *testing.T, in *input, root, socket string, rec *recorder.Recorder) (err error) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()

	k := &kubeletRun{t: t, in: in, rec: rec, root: root, socket: socket}
	k.client = fake.NewSimpleClientset(in.objects...)
	k.client.PrependReactor("create", "serviceaccounts", tokenReactor)

	factory := informers.NewSharedInformerFactory(k.client, 0)
	drivers := factory.Storage().V1().CSIDrivers()
	attachments := factory.Storage().V1().VolumeAttachments()
	drivers.Informer()
	attachments.Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	// Shutdown waits for the informers, which stop with ctx: cancel first,
	// also when an early error returns before the cancel below is deferred.
	defer func() { cancel(); factory.Shutdown() }()

	if err := os.MkdirAll(root, 0o750); err != nil {
		return err
	}
	host := volumetest.NewFakeKubeletVolumeHostWithCSINodeName(t, root, k.client,
		kubeletcsi.ProbeVolumePlugins(), in.nodeName, drivers.Lister(), attachments.Lister())
	// The node status the kubelet reads its attached volumes from.
	host.WithNode(in.node)
	k.mgr = host.GetPluginMgr()

	name, err := register(ctx, socket)
	if err != nil {
		return err
	}
	defer deregister(ctx, name, socket)
	if err := k.quiet(); err != nil {
		return err
	}

	// volumemanager.NewVolumeManager, with the fake SELinux translator.
	nodeName := types.NodeName(in.nodeName)
	k.dsw = cache.NewDesiredStateOfWorld(k.mgr, util.NewFakeSELinuxLabelTranslator())
	k.asw = newActualStateOfWorld(nodeName, k.mgr)
	k.events = record.NewFakeRecorder(10000)
	// The block volume path handler is the kubelet's real one: it
	// bind-mounts the device the driver published at
	// <globalMapPath>/<podUID>, links the pod's device to it and holds a
	// loop device on it; at teardown it detaches the loop device and
	// unmounts the bind mount only when it is a device node. What it leaves
	// when a teardown fails is released by the case (releaseHost).
	oe := operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(
		k.client, k.mgr, k.events, volumepathhandler.NewBlockVolumePathHandler()))
	translator := csitrans.New()
	k.pods = &podSource{pods: map[types.UID]*corev1.Pod{}, removed: map[types.UID]bool{}}
	k.dswp = newPopulator(k.client, k.pods, k.dsw, k.asw, newPluginManager(translator), translator, k.mgr)
	rc := newReconciler(k.client, loopPeriod, 10*time.Minute /* waitForAttachTimeout */, nodeName, k.dsw, k.asw,
		k.dswp.HasAddedPods, oe, hostMounter(host), host.GetHostUtil(), k.mgr, filepath.Join(root, "pods"))

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(3)
	go func() { defer wg.Done(); runPopulator(ctx, k.dswp) }()
	go func() { defer wg.Done(); runReconciler(ctx, rc) }()
	go func() { defer wg.Done(); k.reportVolumesInUse(ctx) }()
	defer k.logEvents()

	pod := in.pod
	k.podName = util.GetUniquePodName(pod)
	k.expected = podVolumeNames(pod)

	// The pod arrives: the kubelet makes its directories (makePodDataDirs),
	// and SyncPod waits for its volumes (WaitForAttachAndMount, which first
	// asks the populator to reprocess the pod).
	for _, d := range []string{"", "volumes", "plugins"} {
		if err := os.MkdirAll(filepath.Join(root, "pods", string(pod.UID), d), 0o750); err != nil {
			return err
		}
	}
	k.pods.add(pod)
	k.dswp.ReprocessPod(k.podName)
	if err := k.waitMounted(); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := k.waitInUseExpansion(); err != nil {
		return err
	}
	if err := k.quiet(); err != nil {
		return err
	}

	// One more pod sync: the volumes of drivers with requiresRepublish are
	// published again (docs/kubelet.md §5). It stands for the sync that
	// follows the first on a whole kubelet (the PLEG's ContainerStarted
	// event: at once from 1.36, within its 1s relist before), the one
	// pod sync `run --hold 2s` makes; the pod workers are not run here.
	if in.republish {
		before := rec.Count("NodePublishVolume")
		k.dswp.ReprocessPod(k.podName)
		want := before + in.republishVolumes
		if err := k.until(func() bool { return rec.Count("NodePublishVolume") >= want }); err != nil {
			return fmt.Errorf("republish: %d NodePublishVolume, want %d: %w", rec.Count("NodePublishVolume"), want, err)
		}
		if err := k.waitMounted(); err != nil {
			return fmt.Errorf("republish: %w", err)
		}
		if err := k.quiet(); err != nil {
			return err
		}
	}

	// One round of the pod's volume stats calculator.
	if in.stats {
		k.statsRound()
		if err := k.quiet(); err != nil {
			return err
		}
	}

	// The pod is deleted and its containers are gone: the populator drops its
	// volumes, the reconciler unmounts them, then unmounts the devices.
	k.pods.remove(pod.UID)
	if err := k.until(k.allUnmounted); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return k.quiet()
}

// register is node-driver-registrar's part (GetPluginInfo on the driver
// socket), then the kubelet plugin watcher's: ValidatePlugin and
// RegisterPlugin of the CSI registration handler, with the versions the
// registrar advertises and no client timeout.
func register(ctx context.Context, socket string) (string, error) {
	conn, err := dialDriver(socket)
	if err != nil {
		return "", err
	}
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	conn.Close()
	if err != nil {
		return "", fmt.Errorf("registrar: GetPluginInfo: %w", err)
	}
	name := info.GetName()
	versions := []string{"1.0.0"}
	switch h := any(kubeletcsi.PluginHandler).(type) {
	case registrationHandlerWithContext:
		if err := h.ValidatePlugin(ctx, name, socket, versions); err != nil {
			return "", err
		}
		return name, h.RegisterPlugin(ctx, name, socket, versions, nil)
	case registrationHandler:
		if err := h.ValidatePlugin(name, socket, versions); err != nil {
			return "", err
		}
		return name, h.RegisterPlugin(name, socket, versions, nil)
	}
	return "", fmt.Errorf("csi.PluginHandler %T has neither registration interface", kubeletcsi.PluginHandler)
}

func deregister(ctx context.Context, name, socket string) {
	switch h := any(kubeletcsi.PluginHandler).(type) {
	case interface {
		DeRegisterPlugin(ctx context.Context, pluginName, endpoint string)
	}:
		h.DeRegisterPlugin(ctx, name, socket)
	case interface {
		DeRegisterPlugin(pluginName, endpoint string)
	}:
		h.DeRegisterPlugin(name, socket)
	case interface{ DeRegisterPlugin(pluginName string) }: // up to 1.32
		h.DeRegisterPlugin(name)
	}
}

// The plugin watcher's view of the CSI registration handler: with a context
// since 1.37, without one before.
type registrationHandlerWithContext interface {
	ValidatePlugin(ctx context.Context, pluginName, endpoint string, versions []string) error
	RegisterPlugin(ctx context.Context, pluginName, endpoint string, versions []string, pluginClientTimeout *time.Duration) error
}

type registrationHandler interface {
	ValidatePlugin(pluginName, endpoint string, versions []string) error
	RegisterPlugin(pluginName, endpoint string, versions []string, pluginClientTimeout *time.Duration) error
}

// waitMounted is WaitForAttachAndMount's condition: every volume the pod's
// containers use is in the desired state and mounted in the actual one.
func (k *kubeletRun) waitMounted() error {
	return k.until(func() bool {
		for _, outer := range k.expected {
			if _, ok := k.mountedVolume(outer); !ok {
				return false
			}
		}
		return true
	})
}

func (k *kubeletRun) allUnmounted() bool {
	if len(k.asw.GetAllMountedVolumes()) > 0 || len(k.asw.GetPossiblyMountedVolumesForPod(k.podName)) > 0 {
		return false
	}
	for _, av := range k.asw.GetAttachedVolumes() {
		if av.DeviceMayBeMounted() {
			return false
		}
	}
	return true
}

// statsRound is what the pod's volume stats calculator does each period
// (volumeStatCalculator.calcAndStoreStats): GetMetrics of each mounted
// volume's mounter (ListVolumesForPod) and of each block volume's mapper
// that supports metrics (ListBlockVolumesForPod). The kubelet goes through
// a map; here it is the pod's order (the cases have one volume).
func (k *kubeletRun) statsRound() {
	for _, v := range k.in.pod.Spec.Volumes {
		mv, ok := k.mountedVolume(v.Name)
		if !ok {
			continue
		}
		var mp volume.MetricsProvider
		switch {
		case mv.Mounter != nil:
			mp = mv.Mounter
		case mv.BlockVolumeMapper != nil:
			if m, ok := mv.BlockVolumeMapper.(volume.MetricsProvider); ok && mv.BlockVolumeMapper.SupportsMetrics() {
				mp = m
			}
		}
		if mp == nil {
			continue
		}
		if _, err := mp.GetMetrics(); err != nil {
			k.t.Logf("kubelet: GetMetrics %s: %v", v.Name, err)
		}
	}
}

// reportVolumesInUse is the node status loop's part: the volumes in use
// are written to node.status.volumesInUse and marked reported in the DSW,
// which the reconciler waits for before it verifies an attachment.
func (k *kubeletRun) reportVolumesInUse(ctx context.Context) {
	tick := time.NewTicker(loopPeriod / 2)
	defer tick.Stop()
	for {
		var inUse []corev1.UniqueVolumeName
		for _, v := range k.dsw.GetVolumesToMount() {
			if !slices.Contains(inUse, v.VolumeName) {
				inUse = append(inUse, v.VolumeName)
			}
		}
		for _, v := range k.asw.GetAllMountedVolumes() {
			if !slices.Contains(inUse, v.VolumeName) {
				inUse = append(inUse, v.VolumeName)
			}
		}
		k.dsw.MarkVolumesReportedInUse(inUse)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (k *kubeletRun) timeout() time.Duration {
	if k.in.phaseTimeout > 0 {
		return k.in.phaseTimeout
	}
	return defaultPhaseTimeout
}

func (k *kubeletRun) until(cond func() bool) error {
	deadline := time.Now().Add(k.timeout())
	for !cond() {
		if time.Now().After(deadline) {
			errs := k.dsw.PopPodErrors(k.podName)
			return fmt.Errorf("timed out after %v (pod errors %q; events: %s)", k.timeout(), errs, strings.Join(k.drainEvents(), "; "))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// quiet waits until the driver has heard nothing for a while.
func (k *kubeletRun) quiet() error {
	deadline := time.Now().Add(k.timeout())
	n := len(k.rec.Calls())
	last := time.Now()
	for time.Since(last) < quiet {
		if time.Now().After(deadline) {
			return fmt.Errorf("the driver never went quiet")
		}
		time.Sleep(20 * time.Millisecond)
		if m := len(k.rec.Calls()); m != n {
			n, last = m, time.Now()
		}
	}
	return nil
}

var eventsMu sync.Mutex

func (k *kubeletRun) drainEvents() []string {
	if k.events == nil {
		return nil
	}
	eventsMu.Lock()
	defer eventsMu.Unlock()
	var out []string
	for {
		select {
		case e := <-k.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (k *kubeletRun) logEvents() {
	for _, e := range k.drainEvents() {
		k.t.Logf("kubelet event: %s", e)
	}
}

// tokenReactor is the API server's TokenRequest: the kubelet's request
// back with expirationSeconds defaulted to 3600 and a status of FakeToken,
// expiring expirationSeconds from now.
func tokenReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || action.GetSubresource() != "token" {
		return false, nil, nil
	}
	tr, ok := create.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return false, nil, nil
	}
	tr = tr.DeepCopy()
	exp := int64(3600)
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	tr.Spec.ExpirationSeconds = &exp
	tr.Status = authenticationv1.TokenRequestStatus{
		Token:               FakeToken,
		ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(exp) * time.Second)),
	}
	return true, tr, nil
}

// podSource is the kubelet's pod manager and pod workers as the volume
// manager sees them.
type podSource struct {
	mu      sync.Mutex
	pods    map[types.UID]*corev1.Pod
	removed map[types.UID]bool
}

func (p *podSource) add(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[pod.UID] = pod
}

func (p *podSource) remove(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, uid)
	p.removed[uid] = true
}

func (p *podSource) GetPodByUID(uid types.UID) (*corev1.Pod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod, ok := p.pods[uid]
	return pod, ok
}

func (p *podSource) GetPods() []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, pod := range p.pods {
		out = append(out, pod)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

func (p *podSource) ShouldPodContainersBeTerminating(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removed[uid]
}

func (p *podSource) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, known := p.pods[uid]
	return p.removed[uid] || !known
}

type allSourcesReady struct{}

func (allSourcesReady) AddSource(string) {}
func (allSourcesReady) AllReady() bool   { return true }

package conformance

import (
	"context"
	"crypto"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// runEnv is what the scenarios of one run share.
type runEnv struct {
	cfg    Config
	info   *DriverInfo
	volume *Volume
	// pool hands the volumes to the scenarios that mount one.
	pool *volumePool
	// record writes down the volumes CreateVolume makes, in the sidecars'
	// record under the run's root dir, for `cleanup` after a kill -9.
	record *sidecars.VolumeRecord
	// tokenKey signs the tokens of every scenario; nil: each token
	// source makes its own.
	tokenKey crypto.Signer
	// traces of the probe and of every scenario run so far, for the timing
	// check.
	mu     sync.Mutex
	traces []namedTrace
	// abandoned: a scenario's teardown was cancelled (a second Ctrl-C).
	abandoned atomic.Bool
}

// newTrace is a trace of the run: the run's secrets are collected from
// its calls before any printer sees them.
func (env *runEnv) newTrace() *csiclient.Trace {
	if env.cfg.Sensitive == nil {
		return csiclient.NewTrace()
	}
	return csiclient.NewTrace(env.cfg.Sensitive)
}

// teardownContext is what the scenarios are torn down with once ctx ended.
func (env *runEnv) teardownContext(ctx context.Context) context.Context {
	if env.cfg.Teardown != nil {
		return env.cfg.Teardown
	}
	return context.WithoutCancel(ctx)
}

type namedTrace struct {
	scenario string
	trace    *csiclient.Trace
}

// DefaultParallel bounds the scenarios that run at once: enough to overlap
// the driver's latency (against the reference driver on 2 cores, 8 took
// 15% less wall time than 4), few enough not to load a node's driver more
// than a kubelet starting a handful of pods would.
const DefaultParallel = 8

// Run runs the scenarios Derive gives for the driver (those --focus and
// --skip select), and the volume set-up around them. Independent scenarios
// run side by side, up to cfg.Parallel at once: each has its own root dir,
// kubelet and trace, and the kubelet's call rules hold within each.
// Scenarios that mount a PersistentVolume each take one from the run's
// volumes: when the driver can CreateVolume, further volumes are made as
// needed (at most one per running scenario); otherwise they take turns on
// the one volume. A scenario that looks at the whole run (the timing
// check) runs after all others. With a Sink (the live trace of -v) the
// scenarios run one at a time, so that their calls do not interleave.
// Results and OnStart/OnResult keep the scenarios' order. probe is the
// trace of Probe, counted by the timing check. A scenario's failure never
// stops the others; an interrupted ctx starts no further scenario, and the
// running ones are torn down and cleaned up.
func Run(ctx context.Context, cfg Config, info *DriverInfo, probe *csiclient.Trace) *Report {
	start := time.Now()
	if cfg.Timeout <= 0 {
		cfg.Timeout = node.DefaultTimeout
	}
	if cfg.Release.Gates == nil {
		cfg.Release = node.DefaultRelease()
	}
	rep := &Report{Driver: info, CSIDriver: cfg.CSIDriver, Started: start, Redactor: csiclient.Redactor{Sensitive: cfg.Sensitive}}
	var selected []Scenario
	for _, sc := range Scenarios(cfg, info) {
		if (cfg.Focus != nil && !cfg.Focus.MatchString(sc.Name)) || (cfg.Skip != nil && cfg.Skip.MatchString(sc.Name)) {
			rep.NotSelected++
			continue
		}
		selected = append(selected, sc)
	}
	// One signing key for the run's token sources (each scenario's kubelet
	// has the one `run` uses, over the scenario's objects: claims follow
	// the release and its gates). The API server signs with an ECDSA
	// P-256 key (ES256, which kube-apiserver's
	// --service-account-signing-key-file takes as well as RSA): making
	// one takes microseconds, where the RSA-2048 key `run` generates takes
	// 50-400 ms, and every scenario mounting a volume with tokenRequests
	// waited for it.
	key, err := tokens.GenerateKey("es256")
	if err != nil {
		key = nil // each token source makes an RSA key instead
	}
	env := &runEnv{cfg: cfg, info: info, record: sidecars.NewVolumeRecord(cfg.RootDir, "conformance"), tokenKey: key}
	if probe != nil {
		env.traces = append(env.traces, namedTrace{"probe", probe})
	}
	parallel := cfg.Parallel
	switch {
	case cfg.Sink != nil, cfg.APIServer != nil:
		parallel = 1
	case parallel <= 0:
		parallel = DefaultParallel
	}
	if slices.ContainsFunc(selected, func(s Scenario) bool { return s.UsesPV && s.Skip == "" }) {
		env.volume = env.prepareVolume(ctx)
		rep.Volume = env.volume
		env.pool = newVolumePool(env.volume, parallel, env.volume.Created && env.volume.Err == nil)
	}
	rep.Results = env.runAll(ctx, selected, parallel)
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	rep.Abandoned = env.abandoned.Load()
	if !rep.Abandoned {
		// A volume a scenario may still hold is not deleted under it.
		env.deleteVolumes(env.teardownContext(ctx))
	}
	// Kept when a volume is left (abandoned, DeleteVolume failed, a
	// CreateVolume without an answer): `cleanup` deletes it.
	env.record.Close()
	rep.ScenarioCalls = map[string][]csiclient.Call{}
	for _, nt := range env.allTraces() {
		calls := nt.trace.Calls()
		rep.ScenarioCalls[nt.scenario] = append(rep.ScenarioCalls[nt.scenario], calls...)
		for _, c := range calls {
			rep.Calls++
			rep.CallTime += c.Duration
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

// runAll runs the scenarios, at most parallel at once, those AfterOthers
// once all the others have ended, and reports them in their order.
func (env *runEnv) runAll(ctx context.Context, selected []Scenario, parallel int) []Result {
	if env.cfg.Sink != nil {
		return env.runInTurn(ctx, selected)
	}
	results := make([]Result, len(selected))
	done := make([]chan struct{}, len(selected))
	for i := range done {
		done[i] = make(chan struct{})
	}
	go func() {
		slots := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		launch := func(i int) {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				results[i] = env.runOne(ctx, selected[i], i+1, nil)
				close(done[i])
			}()
		}
		for i, sc := range selected {
			if !sc.AfterOthers {
				launch(i)
			}
		}
		wg.Wait()
		for i, sc := range selected {
			if sc.AfterOthers {
				launch(i)
			}
		}
	}()
	for i, sc := range selected {
		<-done[i]
		if env.cfg.OnStart != nil && sc.Skip == "" && results[i].Message != interruptedBefore {
			env.cfg.OnStart(sc)
		}
		if env.cfg.OnResult != nil {
			env.cfg.OnResult(results[i])
		}
	}
	return results
}

// runInTurn runs the scenarios one at a time for the live trace (-v): each
// is announced (OnStart) before its first call is traced and reported
// (OnResult) before the next one starts, so that its calls are printed
// under its name; runAll announces a scenario only once it has ended,
// which side by side is the only order that keeps the scenarios' order.
// Those AfterOthers run last; the results are reported in the scenarios'
// order (Derive puts those last too).
func (env *runEnv) runInTurn(ctx context.Context, selected []Scenario) []Result {
	results := make([]Result, len(selected))
	done := make([]bool, len(selected))
	next := 0
	run := func(i int) {
		results[i] = env.runOne(ctx, selected[i], i+1, env.cfg.OnStart)
		done[i] = true
		for ; next < len(selected) && done[next]; next++ {
			if env.cfg.OnResult != nil {
				env.cfg.OnResult(results[next])
			}
		}
	}
	for _, last := range []bool{false, true} {
		for i, sc := range selected {
			if sc.AfterOthers == last {
				run(i)
			}
		}
	}
	return results
}

const interruptedBefore = "interrupted before it ran"

// runOne runs a scenario with a volume of the run when it needs one;
// starting, when set, is told just before a scenario that is not skipped
// starts.
func (env *runEnv) runOne(ctx context.Context, sc Scenario, index int, starting func(Scenario)) Result {
	if ctx.Err() != nil && sc.Skip == "" {
		return Result{Name: sc.Name, Status: Skip, Message: interruptedBefore, KubeletSpecific: sc.KubeletSpecific}
	}
	var vol *Volume
	if sc.UsesPV && sc.Skip == "" && env.pool != nil {
		v, err := env.pool.take(ctx, env.createVolume)
		if err != nil {
			return Result{Name: sc.Name, Status: Skip, Message: interruptedBefore, KubeletSpecific: sc.KubeletSpecific}
		}
		defer env.pool.put(v)
		vol = v
	}
	if starting != nil && sc.Skip == "" {
		starting(sc)
	}
	return env.runScenario(ctx, sc, index, vol)
}

func (env *runEnv) addTrace(name string, t *csiclient.Trace) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.traces = append(env.traces, namedTrace{name, t})
}

func (env *runEnv) allTraces() []namedTrace {
	env.mu.Lock()
	defer env.mu.Unlock()
	return slices.Clone(env.traces)
}

package report

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Progress is the live line a person watches during a long run: pods
// mounted and torn down, calls made, errors. It draws only on a terminal;
// elsewhere (a pipe, a CI log) it only counts, so logs stay clean. It is a
// csiclient sink for the calls; the command tells it about pods. Safe for
// concurrent use.
type Progress struct {
	pods, mounted, tornDown, calls, errors atomic.Int64

	p    *mpb.Progress // nil when not drawing
	bar  *mpb.Bar
	stop sync.Once
}

var _ csiclient.Sink = (*Progress)(nil)

// NewProgress starts the line on out if out is a terminal. pods is how
// many pods the run will mount (0 when not known yet; see AddPods). Call
// Stop before printing anything else to out.
func NewProgress(out *os.File, pods int) *Progress {
	return newProgress(out, term.IsTerminal(int(out.Fd())), pods)
}

func newProgress(w io.Writer, draw bool, pods int) *Progress {
	pr := &Progress{}
	pr.pods.Store(int64(pods))
	if !draw {
		return pr
	}
	pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(100), mpb.WithRefreshRate(150*time.Millisecond),
		mpb.WithAutoRefresh())
	// The bar fills as pods are mounted and then torn down: each pod is
	// two steps of the run's work.
	pr.bar = pr.p.New(int64(2*pods), mpb.BarStyle(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return pr.line() })),
		mpb.AppendDecorators(decor.Percentage(decor.WC{W: 5})),
	)
	return pr
}

// line is the text of the progress line.
func (pr *Progress) line() string {
	return fmt.Sprintf("pods %d/%d mounted, %d torn down · %d calls · %d errors ",
		pr.mounted.Load(), pr.pods.Load(), pr.tornDown.Load(), pr.calls.Load(), pr.errors.Load())
}

// AddPods grows the run by n pods (pod churn, replicas made later).
func (pr *Progress) AddPods(n int) {
	total := pr.pods.Add(int64(n))
	if pr.bar != nil {
		pr.bar.SetTotal(2*total, false)
	}
}

// PodMounted counts a pod whose volumes are all mounted.
func (pr *Progress) PodMounted() {
	pr.mounted.Add(1)
	if pr.bar != nil {
		pr.bar.IncrBy(1)
	}
}

// PodTornDown counts a pod whose volumes are all torn down.
func (pr *Progress) PodTornDown() {
	pr.tornDown.Add(1)
	if pr.bar != nil {
		pr.bar.IncrBy(1)
	}
}

// Call counts a call and whether it failed (csiclient.Sink).
func (pr *Progress) Call(c csiclient.Call) {
	pr.calls.Add(1)
	if c.Err != nil {
		pr.errors.Add(1)
	}
}

// Step is ignored (csiclient.Sink).
func (pr *Progress) Step(csiclient.Step) {}

// Stop draws the line a last time and leaves it on the terminal. It may
// be called more than once.
func (pr *Progress) Stop() {
	pr.stop.Do(func() {
		if pr.p == nil {
			return
		}
		pr.bar.Abort(false)
		pr.p.Wait()
	})
}

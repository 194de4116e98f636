package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Progress is the live line a person watches during a long run: pods
// mounted and torn down, calls made, errors. It draws only on a terminal;
// elsewhere (a pipe, a CI log) it only counts, so logs stay clean. It is a
// csiclient sink for the calls; the command tells it about pods. Safe for
// concurrent use.
//
// It draws the line itself (a carriage return, the text, a bar): a
// progress bar library brought its dependencies' package initialisation
// (a regular expression compiled at start) to every command, though only
// `load` draws.
type Progress struct {
	pods, mounted, tornDown, calls, errors atomic.Int64

	w    io.Writer     // nil when not drawing
	done chan struct{} // closed by Stop
	drew chan struct{} // closed when the drawing goroutine has ended
	stop sync.Once
}

var _ csiclient.Sink = (*Progress)(nil)

// progressRefresh is how often the line is redrawn.
const progressRefresh = 150 * time.Millisecond

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
	pr.w, pr.done, pr.drew = w, make(chan struct{}), make(chan struct{})
	go pr.redraw()
	return pr
}

// redraw draws the line every progressRefresh until Stop.
func (pr *Progress) redraw() {
	defer close(pr.drew)
	t := time.NewTicker(progressRefresh)
	defer t.Stop()
	for {
		pr.draw()
		select {
		case <-pr.done:
			return
		case <-t.C:
		}
	}
}

// draw writes the line over the previous one: the counts, a bar that
// fills as pods are mounted and then torn down (each pod is two steps of
// the run's work), and the percentage.
func (pr *Progress) draw() {
	const width = 30
	total, doneSteps := 2*pr.pods.Load(), pr.mounted.Load()+pr.tornDown.Load()
	pct := int64(0)
	if total > 0 {
		pct = min(100, 100*doneSteps/total)
	}
	filled := int(pct * width / 100)
	fmt.Fprintf(pr.w, "\r%s[%s%s] %3d %%\x1b[K", pr.line(),
		strings.Repeat("=", filled), strings.Repeat("-", width-filled), pct)
}

// line is the text of the progress line.
func (pr *Progress) line() string {
	return fmt.Sprintf("pods %d/%d mounted, %d torn down · %d calls · %d errors ",
		pr.mounted.Load(), pr.pods.Load(), pr.tornDown.Load(), pr.calls.Load(), pr.errors.Load())
}

// AddPods grows the run by n pods (pod churn, replicas made later).
func (pr *Progress) AddPods(n int) { pr.pods.Add(int64(n)) }

// PodMounted counts a pod whose volumes are all mounted.
func (pr *Progress) PodMounted() { pr.mounted.Add(1) }

// PodTornDown counts a pod whose volumes are all torn down.
func (pr *Progress) PodTornDown() { pr.tornDown.Add(1) }

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
		if pr.w == nil {
			return
		}
		close(pr.done)
		<-pr.drew
		pr.draw()
		fmt.Fprintln(pr.w)
	})
}

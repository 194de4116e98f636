package report

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func playPods(pr *Progress, pods int) {
	for i := range pods {
		pr.Call(call("NodeStageVolume", time.Duration(i), time.Millisecond, codes.OK))
		pr.Call(call("NodePublishVolume", time.Duration(i), time.Millisecond, codes.OK))
		pr.PodMounted()
	}
	pr.Call(call("NodePublishVolume", 0, time.Millisecond, codes.Internal))
	for range pods {
		pr.PodTornDown()
	}
}

// Not on a terminal: nothing is drawn, yet the counts are kept.
func TestProgressNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	pr := newProgress(&buf, false, 3)
	playPods(pr, 3)
	pr.Stop()
	pr.Stop()
	if buf.Len() != 0 {
		t.Errorf("progress wrote %q to a non-terminal", buf.String())
	}
	if got, want := pr.line(), "pods 3/3 mounted, 3 torn down · 7 calls · 1 errors "; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}

// A file that is not a terminal (as stdout is in CI) draws nothing.
func TestProgressOnAFile(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	pr := NewProgress(f, 2)
	playPods(pr, 2)
	pr.Stop()
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("progress wrote %d bytes to a file", st.Size())
	}
}

// On a terminal the line ends showing the final counts.
func TestProgressDraws(t *testing.T) {
	var buf bytes.Buffer
	pr := newProgress(&buf, true, 2)
	pr.AddPods(1)
	playPods(pr, 3)
	pr.Stop()
	out := buf.String()
	if !strings.Contains(out, "pods 3/3 mounted, 3 torn down · 7 calls · 1 errors") {
		t.Errorf("progress output = %q", out)
	}
}

// The load command starts the line before it knows the pods and adds
// them once scheduled; the line still counts to the end.
func TestProgressPodsAddedLater(t *testing.T) {
	var buf bytes.Buffer
	pr := newProgress(&buf, true, 0)
	pr.AddPods(2)
	playPods(pr, 2)
	pr.Stop()
	if out := buf.String(); !strings.Contains(out, "pods 2/2 mounted, 2 torn down · 5 calls · 1 errors") || !strings.Contains(out, "100 %") {
		t.Errorf("progress output = %q", out)
	}
}

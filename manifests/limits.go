package manifests

import (
	"fmt"
	"io"
)

// Limits bound what one run reads, so that no input makes it run for long
// or fill memory: a manifest set for one node's pods is a few kilobytes and
// a few dozen objects. Lists inside Lists are not expanded (such an item is
// skipped as an unread kind), so Lists nest one level deep.
type Limits struct {
	// Bytes read from every file and stdin together.
	Bytes int64
	// Objects: documents and List items together, skipped ones included.
	Objects int
}

// DefaultLimits are far above any real manifest set: 8 MiB and 10,000
// objects load in well under a second.
var DefaultLimits = Limits{Bytes: 8 << 20, Objects: 10000}

// budget is what is left of the limits during one Load.
type budget struct {
	limits  Limits
	bytes   int64
	objects int
}

// exceeded tells that a limit was passed: the reading stops there, since
// the limits keep a run from an input too big to hold.
func (b *budget) exceeded() bool {
	return b.bytes > b.limits.Bytes || b.objects > b.limits.Objects
}

// countingReader fails a read that takes the run past its byte limit.
type countingReader struct {
	r io.Reader
	b *budget
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.b.bytes += int64(n)
	if c.b.bytes > c.b.limits.Bytes {
		return n, fmt.Errorf("more than %s of manifests in one run (the simulator's limit)", byteSize(c.b.limits.Bytes))
	}
	return n, err
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// countObject counts one document or List item against the limit.
func (l *Loader) countObject(src Source) error {
	l.budget.objects++
	if l.budget.objects > l.budget.limits.Objects {
		return &InputError{Source: src, Err: fmt.Errorf("more than %d objects (documents and List items) in one run (the simulator's limit)", l.budget.limits.Objects)}
	}
	return nil
}

package report

import (
	"fmt"
	"math"
	"time"
)

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n+1:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// fmtDur prints a duration with the unit a person reads best.
func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d/time.Microsecond)
}

func fmtMS(ms float64) string {
	return fmtDur(time.Duration(ms * float64(time.Millisecond)))
}

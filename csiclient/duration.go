package csiclient

import (
	"fmt"
	"time"
)

// FormatDuration is how every measured time is printed in the text
// outputs (the trace's time column, the summaries): three significant
// digits, in milliseconds below a second and in seconds from there
// (0.512ms, 2.20ms, 20.2ms, 230ms, 9.94s, 123s), so that one run's
// numbers read alike and line up.
func FormatDuration(d time.Duration) string {
	// 999.5ms and up print as seconds: "1000ms" would be a fourth digit.
	if d >= time.Second-500*time.Microsecond {
		return sig3(d.Seconds()) + "s"
	}
	return sig3(float64(d)/float64(time.Millisecond)) + "ms"
}

// sig3 prints x (>= 0) with three significant digits, whole numbers from
// 100 up.
func sig3(x float64) string {
	switch {
	case x >= 99.95:
		return fmt.Sprintf("%.0f", x)
	case x >= 9.995:
		return fmt.Sprintf("%.1f", x)
	case x >= 0.9995:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3f", x)
}

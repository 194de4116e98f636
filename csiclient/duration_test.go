package csiclient

import (
	"testing"
	"time"
)

// One format for every printed duration: three significant digits, ms
// below a second, s from there (issue 32: 9.93582s beside 20.23ms).
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                          "0.000ms",
		512 * time.Microsecond:     "0.512ms",
		999_900 * time.Nanosecond:  "1.00ms",
		2200 * time.Microsecond:    "2.20ms",
		20230 * time.Microsecond:   "20.2ms",
		99_990 * time.Microsecond:  "100ms",
		230630 * time.Microsecond:  "231ms",
		999_999 * time.Microsecond: "1.00s",
		999_500 * time.Microsecond: "1.00s",
		999_499 * time.Microsecond: "999ms",
		9935820 * time.Microsecond: "9.94s",
		123456 * time.Millisecond:  "123s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

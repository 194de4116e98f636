package printers

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Colour marks outcomes on a terminal only, as kubectl and git do: never
// in a pipe or file, never with NO_COLOR set (https://no-color.org) or
// TERM=dumb.

type Palette struct{ On bool }

// paletteFor is the palette of a stream: colour when it is a terminal.
func PaletteFor(w io.Writer) Palette {
	if o, ok := w.(interface{ Underlying() io.Writer }); ok {
		w = o.Underlying()
	}
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return Palette{}
	}
	return Palette{On: term.IsTerminal(int(f.Fd()))}
}

func (p Palette) paint(code, s string) string {
	if !p.On {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// outcome colours an outcome word: failures red, passes green, skips
// yellow; anything else as it is.
func (p Palette) Outcome(s string) string {
	switch s {
	case "FAIL", "FAILED":
		return p.paint("31", s)
	case "PASS", "OK":
		return p.paint("32", s)
	case "SKIP", "SKIPPED":
		return p.paint("33", s)
	}
	return s
}

package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Colour marks outcomes on a terminal only, as kubectl and git do: never
// in a pipe or file, never with NO_COLOR set (https://no-color.org) or
// TERM=dumb.

type palette struct{ on bool }

// paletteFor is the palette of a stream: colour when it is a terminal.
func paletteFor(w io.Writer) palette {
	if o, ok := w.(*outputSwitch); ok {
		w = o.base
	}
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return palette{}
	}
	return palette{on: term.IsTerminal(int(f.Fd()))}
}

func (p palette) paint(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// outcome colours an outcome word: failures red, passes green, skips
// yellow; anything else as it is.
func (p palette) outcome(s string) string {
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

package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
)

// Colour only on a terminal: a buffer, a pipe and NO_COLOR get none.
func TestPalette(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]any{"buffer": &bytes.Buffer{}, "pipe": w, "switch over a pipe": newOutputSwitch(w)} {
		var p printers.Palette
		switch o := out.(type) {
		case *bytes.Buffer:
			p = printers.PaletteFor(o)
		case *os.File:
			p = printers.PaletteFor(o)
		case *outputSwitch:
			p = printers.PaletteFor(o)
		}
		if got := p.Outcome("FAIL"); got != "FAIL" {
			t.Errorf("%s: %q, want no colour", name, got)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if printers.PaletteFor(tty).On {
			t.Errorf("NO_COLOR set, yet colour on a terminal")
		}
	}
	if got := (printers.Palette{On: true}).Outcome("FAIL"); got != "\x1b[31mFAIL\x1b[0m" {
		t.Errorf("FAIL on a terminal: %q, want red", got)
	}
	if got := (printers.Palette{On: true}).Outcome("OK"); got != "\x1b[32mOK\x1b[0m" {
		t.Errorf("OK on a terminal: %q, want green", got)
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// shellCommands reads an Example as a shell would, enough for the
// examples' syntax: a line ending in one backslash goes on on the next
// line, | separates the commands of a pipeline, # starts a comment, >
// redirects (its word is dropped), double quotes make one word, a
// backslash escapes the next character. A pipeline that starts with | is
// a syntax error, as in the shell. Each result is one pipeline.
func shellCommands(t *testing.T, example string) [][][]string {
	t.Helper()
	var out [][][]string
	lines := strings.Split(example, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + lines[i]
		}
		words := shellWords(line)
		if len(words) == 0 {
			continue
		}
		if words[0] == "|" {
			t.Errorf("syntax error near unexpected token `|' in %q (the line before does not go on)", strings.TrimSpace(line))
			continue
		}
		var pipeline [][]string
		var cmd []string
		for j := 0; j < len(words); j++ {
			switch words[j] {
			case "|":
				pipeline, cmd = append(pipeline, cmd), nil
			case ">":
				j++
			default:
				cmd = append(cmd, words[j])
			}
		}
		out = append(out, append(pipeline, cmd))
	}
	return out
}

// continues tells whether a line ends in an unescaped backslash.
func continues(line string) bool {
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == '"':
			quoted, inWord = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case !quoted && c == '#' && !inWord:
			i = len(line)
		case !quoted && (c == '|' || c == '>') && !inWord:
			words = append(words, string(c))
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// Every example of every command, pasted into a shell, is a command line
// that the command's own flags and arguments accept (issue 17: a literal
// \\ in the tokens example broke the pipeline when pasted).
func TestExamplesParse(t *testing.T) {
	var visit func(c *cobra.Command)
	checked := 0
	visit = func(c *cobra.Command) {
		for _, pipeline := range shellCommands(t, c.Example) {
			for _, args := range pipeline {
				if len(args) == 0 || args[0] != "csi-kubelet-sim" {
					continue // jq and the like
				}
				checkExampleParses(t, c.CommandPath(), args[1:])
				checked++
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCommand(session.Streams{}))
	if checked < 20 {
		t.Errorf("only %d example command lines found", checked)
	}
}

// checkExampleParses finds the command of one example line in a fresh
// tree and parses the line with its flags and argument rules.
func checkExampleParses(t *testing.T, where string, args []string) {
	t.Helper()
	root := newRootCommand(session.Streams{})
	root.InitDefaultHelpCmd() // as Execute does
	c, rest, err := root.Find(args)
	if err == nil {
		err = c.ParseFlags(rest)
	}
	if err == nil && c.Args != nil {
		err = c.ValidateArgs(c.Flags().Args())
	}
	if err != nil {
		t.Errorf("%s example `csi-kubelet-sim %s`: %v", where, strings.Join(args, " "), err)
	}
}

// The tokens example, pasted as it is printed into a shell in an empty
// directory, makes a key, mints a token with it and verifies the token.
func TestTokensExampleRuns(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, pipeline := range shellCommands(t, tokensExample) {
		stdin := ""
		for _, args := range pipeline {
			var out, errb bytes.Buffer
			code := run(context.Background(), args[1:], session.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
			if code != 0 {
				t.Fatalf("`%s`: exit %d\n%s", strings.Join(args, " "), code, errb.String())
			}
			stdin = out.String()
		}
	}
}

package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// docReader splits a stream into YAML documents exactly as apimachinery's
// YAMLReader does, so that documents are numbered as before (a line
// starting with "---" ends a non-empty document, only a comment may follow
// the marker, and a marker that ends nothing stays at the head of the next
// document), and also tells the line each document starts on, so that
// problems can name the line of the file rather than of the document.
type docReader struct {
	r    *bufio.Reader
	line int // lines read so far
}

func newDocReader(r io.Reader) *docReader { return &docReader{r: bufio.NewReader(r)} }

// next returns the next document and the file line of its first line.
func (d *docReader) next() (doc []byte, start int, err error) {
	var buf bytes.Buffer
	for {
		line, err := d.r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		eof := errors.Is(err, io.EOF)
		if len(line) > 0 || !eof {
			d.line++
		}
		if bytes.HasPrefix(line, []byte("---")) {
			rest := strings.TrimSpace(string(line[3:]))
			if rest != "" && rest[0] != '#' {
				return nil, d.line, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			if buf.Len() != 0 {
				return buf.Bytes(), start, nil
			}
			if eof {
				return nil, 0, io.EOF
			}
		}
		if eof {
			if len(line) > 0 {
				if buf.Len() == 0 {
					start = d.line
				}
				buf.Write(line)
				buf.WriteByte('\n')
			}
			if buf.Len() != 0 {
				return buf.Bytes(), start, nil
			}
			return nil, 0, io.EOF
		}
		if buf.Len() == 0 {
			start = d.line
		}
		buf.Write(line)
	}
}

// yamlLineRE finds the line go-yaml (v2, the one sigs.k8s.io/yaml
// converts with) names in a syntax error.
var yamlLineRE = regexp.MustCompile(`yaml: line (\d+): (.*)$`)

// parserProblems are go-yaml's parser (not scanner) errors. go-yaml v2
// reports them at the 0-based line of the offending token, so that an
// indentation error names the line before the bad one; the scanner's
// errors are 1-based already.
var parserProblems = []string{
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected <document start>",
	"did not find expected node content",
	"found incompatible YAML document",
	"found undefined tag handle",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
}

// syntaxLine is the 1-based line, within its document, of a YAML syntax
// error, and the message without the line; 0 when the error names none.
func syntaxLine(err error) (int, string) {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, err.Error()
	}
	n, _ := strconv.Atoi(m[1])
	msg := m[2]
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			n++
			break
		}
	}
	return n, "yaml: " + msg
}

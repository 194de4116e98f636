// Package printers turns what an engine session hands its observer into
// the command's output: the live trace, the header and the summary of
// run, plan, load and cleanup (Session), conformance's results
// (Conformance), the scenario list and the version, as text or JSON
// lines.
package printers

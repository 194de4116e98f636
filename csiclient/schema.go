package csiclient

// SchemaVersion is the version of the JSON records every command prints
// (calls, steps, summaries, scenarios, findings): each record carries it
// as "schemaVersion", so that a consumer can tell a change of fields. A
// record's outcome is "result", OK or FAILED (SKIPPED for a conformance
// scenario that did not run), in every kind of record.
const SchemaVersion = 1

// Results of a record.
const (
	ResultOK      = "OK"
	ResultFailed  = "FAILED"
	ResultSkipped = "SKIPPED"
)

package csiclient

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Failure is why a call to the driver failed, as a person must be told:
// the two ends of "Unavailable" are far apart. Nothing listening on the
// socket is the environment; a driver that answered with an error, even
// Unavailable, is running and failed the call.
type Failure int

const (
	// Answered: the driver answered with an error status.
	Answered Failure = iota
	// NotListening: the connect failed; no driver got the call (*DialError).
	NotListening
	// NoAnswer: the call ran out of time without an answer.
	NoAnswer
)

// Classify tells why err, the error of one call, happened.
func Classify(err error) Failure {
	var de *DialError
	switch {
	case errors.As(err, &de):
		return NotListening
	case status.Code(err) == codes.DeadlineExceeded:
		return NoAnswer
	}
	return Answered
}

// DriverStatus is the status the driver answered with, its own code and
// message, however deeply err wraps it (status.FromError would give the
// whole wrapped text as the message).
func DriverStatus(err error) (*status.Status, bool) {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return nil, false
	}
	return se.GRPCStatus(), true
}

// Explain words a failed call for a person: what the socket or the driver
// did, with the driver's own code and message when it answered.
func Explain(err error) string {
	var de *DialError
	switch Classify(err) {
	case NotListening:
		errors.As(err, &de)
		return de.NotListening()
	case NoAnswer:
		why := err.Error()
		if st, ok := DriverStatus(err); ok {
			why = fmt.Sprintf("%s: %s", st.Code(), st.Message())
		}
		return fmt.Sprintf("no answer within the timeout (%s): is the driver running and answering on the socket?", why)
	}
	if st, ok := DriverStatus(err); ok {
		return fmt.Sprintf("the driver answered with an error: code %s, message %q", st.Code(), st.Message())
	}
	return err.Error()
}

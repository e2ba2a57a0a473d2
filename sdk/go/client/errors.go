package client

import "fmt"

// RefusalDetails is what the cluster's verdict-* metadata said about a refusal (docs/protocol-outcomes.md).
type RefusalDetails struct {
	StatusReason    string
	LeaderID        string
	LeaderAddress   string
	RecordedOutcome string
}

// Error is a refusal or failure reported by the cluster, or by the SDK before any RPC.
type Error struct {
	// Code is the gRPC code's name: INVALID_ARGUMENT, FAILED_PRECONDITION, UNAVAILABLE, ...
	Code    string
	Reason  string
	Address string
	Details RefusalDetails
	// Exhausted is true when every node was tried until the call's deadline
	// and none answered: the request may or may not have reached a leader.
	Exhausted bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Reason }

// OutcomeUnknownError: a commit was sent but no outcome came back. Ask later with Client.Outcome(TxnID).
type OutcomeUnknownError struct {
	TxnID     string
	LastError string
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("the outcome of transaction %s is unknown (%s); ask later with Outcome(%q)", e.TxnID, e.LastError, e.TxnID)
}

func invalidArgument(format string, a ...any) *Error {
	return &Error{Code: "INVALID_ARGUMENT", Reason: fmt.Sprintf(format, a...)}
}

// Package tcc is Try / Confirm / Cancel for Go participants (docs/tcc.md):
// handlers that run SQL in a local PostgreSQL transaction with the barrier
// row of the branch written in the same transaction, as a participant
// Resource. Nothing stays open or prepared between PREPARE and the
// decision: Try commits its reserve and the barrier row "tried" together;
// Confirm spends it and Cancel releases it, each with its barrier row. The
// table and the rule are the TypeScript runtime's (src/participant/tcc), so
// either runtime reads the other's rows.
package tcc

import (
	"fmt"
	"time"

	"verdict/sdk/go/participant"
)

// Branch states in the barrier.
const (
	Tried          = "tried"
	Confirmed      = "confirmed"
	Cancelled      = "cancelled"
	EmptyCancelled = "empty-cancelled"
)

// Barrier operations.
const (
	OpTry     = "try"
	OpConfirm = "confirm"
	OpCancel  = "cancel"
)

// Verdict kinds of the barrier rule.
const (
	// Run the handler and write Next with its effect.
	Run = "run"
	// Record Next without running a handler (an empty rollback).
	Record = "record"
	// Done already: answer as the first time did, run nothing, write nothing.
	Done = "done"
	// Refuse with Reason: a Try votes NO, a Confirm or Cancel fails and is redelivered by the cluster.
	Refuse = "refuse"
)

// Verdict is what the barrier rule says about one message.
type Verdict struct {
	Kind    string
	Next    string
	Reason  string
	Hanging bool
}

// Step is the barrier rule (docs/tcc.md, "The barrier"): state is the
// branch's record ("" when none), op the message.
func Step(txnID, state, op string) Verdict {
	switch op {
	case OpTry:
		if state == "" {
			return Verdict{Kind: Run, Next: Tried}
		}
		if state == Tried || state == Confirmed {
			return Verdict{Kind: Done}
		}
		return Verdict{Kind: Refuse, Reason: fmt.Sprintf("Try for %s refused: its Cancel came first (%s); a reserve now would never be released (hanging Try)", txnID, state), Hanging: true}
	case OpConfirm:
		switch state {
		case Tried:
			return Verdict{Kind: Run, Next: Confirmed}
		case Confirmed:
			return Verdict{Kind: Done}
		case "":
			return Verdict{Kind: Refuse, Reason: fmt.Sprintf("Confirm for %s refused: no Try is on record for it here", txnID)}
		}
		return Verdict{Kind: Refuse, Reason: fmt.Sprintf("Confirm for %s refused: it was cancelled here (%s)", txnID, state)}
	case OpCancel:
		switch state {
		case Tried:
			return Verdict{Kind: Run, Next: Cancelled}
		case "":
			return Verdict{Kind: Record, Next: EmptyCancelled}
		case Confirmed:
			return Verdict{Kind: Refuse, Reason: fmt.Sprintf("Cancel for %s refused: it was confirmed here", txnID)}
		}
		return Verdict{Kind: Done}
	}
	return Verdict{Kind: Refuse, Reason: fmt.Sprintf("unknown TCC operation %q", op)}
}

// TTLMax: longer TTLs are refused as a typo (30 days; a node refuses a vote that carries more).
const TTLMax = participant.ReserveTTLMax

// TTLProblem is why a Try's TTL is refused, or "" (0 means none: held until the decision).
func TTLProblem(ttl time.Duration) string {
	if ttl == 0 {
		return ""
	}
	if ttl < 0 || ttl%time.Millisecond != 0 {
		return fmt.Sprintf("the Try handler gave a TTL of %v; a TTL must be a positive whole number of milliseconds", ttl)
	}
	if ttl > TTLMax {
		return fmt.Sprintf("the Try handler gave a TTL of %v; at most %v (30 days)", ttl, TTLMax)
	}
	return ""
}

// Refusal is what a Try handler returns to vote NO with a reason (no seats left, funds short); any other error votes NO too.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

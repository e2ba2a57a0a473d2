package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	pb "verdict/sdk/go/pb/coordinatorpb"
)

// Transaction is one transaction: enlist participants locally, then one Commit (or Abort) carrying the client-chosen id.
type Transaction struct {
	TxnID        string
	TimeoutMs    uint64
	DeadlineAtMs uint64
	LeaderID     string

	conn     *Connection
	parallel *bool
	mu       sync.Mutex
	order    []string
	enlisted map[string][]byte
	state    string
	result   *OutcomeResult
	begin    *BeginRule
}

func newTransaction(conn *Connection, id string, o TxnOptions, begun bool) *Transaction {
	return &Transaction{TxnID: id, TimeoutMs: o.TimeoutMs, conn: conn, parallel: o.ParallelCommit, enlisted: map[string][]byte{}, state: "open", begin: NewBeginRule(begun)}
}

// ParticipantIDs are the enlisted participants, in the order enlisted.
func (t *Transaction) ParticipantIDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.order...)
}

// Enlist adds a participant; local only. Its payload ([]byte, string, or a value encoded as JSON) is sent to it with PREPARE.
func (t *Transaction) Enlist(participantID string, payload any) error {
	if err := CheckParticipantID(participantID); err != nil {
		return err
	}
	b, err := EncodePayload(payload)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != "open" {
		return &Error{Code: "FAILED_PRECONDITION", Reason: fmt.Sprintf("transaction %s is %s; enlist before commit", t.TxnID, t.state)}
	}
	if _, ok := t.enlisted[participantID]; ok {
		return invalidArgument("participant %q is already enlisted in %s", participantID, t.TxnID)
	}
	t.enlisted[participantID] = b
	t.order = append(t.order, participantID)
	return nil
}

// request is the next attempt's Commit; t.mu is held.
func (t *Transaction) request() *pb.CommitRequest {
	mode := pb.CommitMode_COMMIT_MODE_DEFAULT
	if t.parallel != nil {
		mode = pb.CommitMode_COMMIT_MODE_CLASSIC
		if *t.parallel {
			mode = pb.CommitMode_COMMIT_MODE_PARALLEL
		}
	}
	enl := make([]*pb.Enlistment, 0, len(t.order))
	for _, p := range t.order {
		enl = append(enl, &pb.Enlistment{ParticipantId: p, Payload: t.enlisted[p]})
	}
	if t.begin.Begins() {
		return &pb.CommitRequest{TxnId: t.TxnID, Participants: enl, Begin: true, TimeoutMs: t.TimeoutMs, CommitMode: mode}
	}
	return &pb.CommitRequest{TxnId: t.TxnID, Participants: enl, CommitMode: mode}
}

// Commit asks the cluster to commit and returns the decided outcome
// (COMMITTED or ABORTED). It returns an *Error when the cluster refused the
// request, and an *OutcomeUnknownError when no answer came (ask
// Client.Outcome later). Calling it again resends the same request (R7) or
// returns the known result. callTimeout 0 means the connection's.
func (t *Transaction) Commit(ctx context.Context, callTimeout time.Duration) (OutcomeResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result != nil {
		return *t.result, nil
	}
	if t.state == "aborted" {
		return OutcomeResult{}, &Error{Code: "FAILED_PRECONDITION", Reason: fmt.Sprintf("transaction %s was aborted by this client", t.TxnID)}
	}
	if len(t.order) == 0 {
		return OutcomeResult{}, invalidArgument("transaction %s has no participants; enlist at least one before commit", t.TxnID)
	}
	t.state = "committing"
	c := t.conn
	var need time.Duration
	if t.TimeoutMs > 0 {
		need = time.Duration(t.TimeoutMs)*time.Millisecond + CommitGrace
	}
	if callTimeout <= 0 {
		callTimeout = c.CallTimeout
	}
	attempt := c.AttemptTimeout
	if need > callTimeout {
		callTimeout = need
	}
	if need > attempt {
		attempt = need
	}
	answer := &pb.TxnOutcome{}
	err := c.Call(ctx, "Commit", t.request(), answer, CallOptions{CallTimeout: callTimeout, AttemptTimeout: attempt, NextRequest: func(f Failure) proto.Message {
		t.begin.Attempted(f)
		return t.request()
	}})
	if err != nil {
		var ve *Error
		if errors.As(err, &ve) && !ve.Exhausted {
			f := ClassifyFailure(ve.Code, ve.Details.StatusReason, false)
			t.begin.Attempted(f)
			if f == Refused {
				return OutcomeResult{}, err
			}
		}
		// Out of time, or INTERNAL, CANCELLED, ...: the request may have been applied.
		return OutcomeResult{}, &OutcomeUnknownError{TxnID: t.TxnID, LastError: err.Error()}
	}
	t.begin.Attempted(Answered)
	r, err := ToOutcomeResult(t.TxnID, answer)
	if err != nil {
		return OutcomeResult{}, err
	}
	if r.Outcome != Committed && r.Outcome != Aborted {
		msg := "the cluster answered " + r.Outcome
		if r.Reason != "" {
			msg += ": " + r.Reason
		}
		return OutcomeResult{}, &OutcomeUnknownError{TxnID: t.TxnID, LastError: msg}
	}
	t.result = &r
	return r, nil
}

// Abort asks the cluster to abort; the answer is the outcome, COMMITTED if the abort came too late.
func (t *Transaction) Abort(ctx context.Context, reason string) (OutcomeResult, error) {
	t.mu.Lock()
	unsent := t.begin.Begins() && t.state == "open"
	t.state = "aborted"
	t.mu.Unlock()
	if unsent {
		// Never sent, so never begun: the cluster knows nothing to abort (presumed abort, R3).
		if reason == "" {
			reason = "aborted by the application before commit"
		}
		return OutcomeResult{TxnID: t.TxnID, Outcome: Aborted, Reason: reason}, nil
	}
	a := &pb.TxnOutcome{}
	if err := t.conn.Call(ctx, "Abort", &pb.AbortRequest{TxnId: t.TxnID, Reason: reason}, a, CallOptions{}); err != nil {
		return OutcomeResult{}, err
	}
	return ToOutcomeResult(t.TxnID, a)
}

// Package participant is the participant runtime: it serves
// verdict.participant.Participant (Prepare, Decide, Exchange, Status),
// registers with the cluster, keeps a durable journal and resolves
// transactions left in doubt by asking the cluster. The Go twin of
// src/participant/runtime.ts and sdk/python/verdict/participant.py.
//
// Per transaction the state goes none -> prepared -> committed | aborted, or
// none -> refused (a NO vote, or a Status question before any PREPARE) and
// none -> aborted (an ABORT before its PREPARE). The rules are
// proto/participant.proto's:
//
//   - PREPARE: a transaction aborted or refused here gets NO; prepared or
//     committed gets YES again (R7). Otherwise the resource prepares, the
//     journal records "prepared" with fsync, and only then the YES leaves (R4).
//   - DECISION: prepared -> apply, journal, ACK; the same outcome again ->
//     ACK; nothing known and ABORT -> remember the abort durably, ACK;
//     nothing known and COMMIT, or the other outcome already applied ->
//     FAILED_PRECONDITION.
//   - Status: a transaction neither prepared nor decided is first recorded
//     as refused, durably, then answered REFUSED.
//   - In doubt (prepared, no DECISION after InDoubtAfter, or after a
//     restart): ask Coordinator.GetOutcome with this participant's id, with
//     backoff, until COMMITTED or ABORTED, however long that takes.
package participant

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"verdict/sdk/go/client"
	ppb "verdict/sdk/go/pb/participantpb"
)

const (
	// InDoubtAfter: a prepared transaction without a DECISION for this long is asked about.
	InDoubtAfter = 2 * time.Second
	askPauseMin  = 200 * time.Millisecond
	askPauseMax  = 10 * time.Second
)

// Refusal is an answer with a gRPC status: FAILED_PRECONDITION or INVALID_ARGUMENT, and the reason.
type Refusal struct {
	Code    codes.Code
	Details string
}

func (r *Refusal) Error() string { return r.Details }

// Log takes one event with its fields (a structured line).
type Log func(event string, fields map[string]any)

type doubt struct {
	nextAskAt time.Time
	tries     int
}

type txnLock struct {
	mu    sync.Mutex
	users int
}

// Engine is the participant's state machine over a journal and a resource;
// one transaction's requests run one at a time, others never wait on it.
type Engine struct {
	ParticipantID string
	Journal       *Journal
	Resource      Resource
	Log           Log
	InDoubtAfter  time.Duration

	clusterMu sync.RWMutex
	clusterID string

	locksMu sync.Mutex
	locks   map[string]*txnLock

	doubtsMu sync.Mutex
	doubts   map[string]*doubt
	rnd      *rand.Rand
}

// NewEngine restores the resource from the journal; what was prepared is in doubt at once.
func NewEngine(clusterID, participantID string, j *Journal, r Resource, log Log) (*Engine, error) {
	if err := client.CheckParticipantID(participantID); err != nil {
		return nil, err
	}
	e := &Engine{ParticipantID: participantID, Journal: j, Resource: r, Log: log, InDoubtAfter: InDoubtAfter, clusterID: clusterID,
		locks: map[string]*txnLock{}, doubts: map[string]*doubt{}, rnd: rand.New(rand.NewSource(time.Now().UnixNano()))}
	now := time.Now()
	for _, en := range j.Entries() {
		if err := r.Restore(en.TxnID, en.State, en.Payload); err != nil {
			return nil, fmt.Errorf("restoring %s (%s): %w", en.TxnID, en.State, err)
		}
		if en.State == Prepared {
			e.doubts[en.TxnID] = &doubt{nextAskAt: now}
		}
	}
	// Prepared in the resource but never journalled: no YES left for it, so the cluster aborts it (R3); ask all the same.
	held, err := r.PreparedHere()
	if err != nil {
		return nil, fmt.Errorf("listing what the resource holds prepared: %w", err)
	}
	for _, t := range held {
		if _, ok := j.Get(t); !ok && e.doubts[t] == nil {
			e.doubts[t] = &doubt{nextAskAt: now}
		}
	}
	return e, nil
}

// ClusterID is the cluster this participant belongs to.
func (e *Engine) ClusterID() string {
	e.clusterMu.RLock()
	defer e.clusterMu.RUnlock()
	return e.clusterID
}

// SetClusterID sets it once learned from the cluster.
func (e *Engine) SetClusterID(id string) {
	e.clusterMu.Lock()
	defer e.clusterMu.Unlock()
	e.clusterID = id
}

func (e *Engine) lock(txnID string) func() {
	e.locksMu.Lock()
	l := e.locks[txnID]
	if l == nil {
		l = &txnLock{}
		e.locks[txnID] = l
	}
	l.users++
	e.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.locksMu.Lock()
		l.users--
		if l.users == 0 {
			delete(e.locks, txnID)
		}
		e.locksMu.Unlock()
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (e *Engine) check(clusterID, txnID, participantID string) error {
	if clusterID != e.ClusterID() {
		return &Refusal{codes.FailedPrecondition, fmt.Sprintf("cluster %q is not this participant's cluster %q", clip(clusterID, 64), e.ClusterID())}
	}
	if participantID != e.ParticipantID {
		return &Refusal{codes.FailedPrecondition, fmt.Sprintf("participant %q is not this participant (%q)", clip(participantID, 64), e.ParticipantID)}
	}
	if !client.TxnIDPattern.MatchString(txnID) {
		return &Refusal{codes.InvalidArgument, "txn_id must be 1-128 of [A-Za-z0-9_.:-], starting with a letter or digit"}
	}
	return nil
}

// Prepare answers a PREPARE: YES only once "prepared" is durable in the journal (R4).
func (e *Engine) Prepare(clusterID, txnID, participantID string, payload []byte, timeoutMs uint64) (yes bool, reason string, err error) {
	if err := e.check(clusterID, txnID, participantID); err != nil {
		return false, "", err
	}
	defer e.lock(txnID)()
	if en, ok := e.Journal.Get(txnID); ok {
		if en.State == Prepared || en.State == Committed {
			return true, "", nil
		}
		return false, fmt.Sprintf("%s is %s here", txnID, en.State), nil
	}
	reason, perr := e.Resource.Prepare(txnID, payload, timeoutMs)
	if perr != nil {
		_ = e.Resource.Rollback(txnID)
		reason = "the resource failed to prepare: " + perr.Error()
	}
	if reason != "" {
		// Remembered durably, so a Status question or a later PREPARE of it is answered the same.
		if _, err := e.Journal.Record(txnID, Refused, nil); err != nil {
			return false, "", err
		}
		e.Log("vote", map[string]any{"txn_id": txnID, "participant_id": e.ParticipantID, "vote": "NO", "reason": reason})
		return false, reason, nil
	}
	if _, err := e.Journal.Record(txnID, Prepared, payload); err != nil {
		// No YES without the journal's record (R4): release what the resource holds, and answer with the error.
		_ = e.Resource.Rollback(txnID)
		return false, "", err
	}
	e.doubtsMu.Lock()
	e.doubts[txnID] = &doubt{nextAskAt: time.Now().Add(e.InDoubtAfter)}
	e.doubtsMu.Unlock()
	e.Log("vote", map[string]any{"txn_id": txnID, "participant_id": e.ParticipantID, "vote": "YES"})
	return true, "", nil
}

// Decide applies a DECISION: it returns once the outcome is applied and durable (then ACK), or a *Refusal.
func (e *Engine) Decide(clusterID, txnID, participantID string, commit bool, source string) error {
	if err := e.check(clusterID, txnID, participantID); err != nil {
		return err
	}
	to := Aborted
	if commit {
		to = Committed
	}
	defer e.lock(txnID)()
	en, known := e.Journal.Get(txnID)
	if known && en.State == to {
		return nil
	}
	if known && (en.State == Committed || en.State == Aborted) {
		return &Refusal{codes.FailedPrecondition, fmt.Sprintf("%s is already %s here; a decided outcome never changes", txnID, en.State)}
	}
	if !known || en.State != Prepared {
		if commit {
			return &Refusal{codes.FailedPrecondition, fmt.Sprintf("COMMIT of %s, never prepared here", txnID)}
		}
		// Presumed abort: remember it so a later PREPARE gets NO, and release any work held for it.
		if err := e.Resource.Rollback(txnID); err != nil {
			return err
		}
		if _, err := e.Journal.Record(txnID, Aborted, nil); err != nil {
			return err
		}
		e.forgetDoubt(txnID)
		e.Log("decided", map[string]any{"txn_id": txnID, "participant_id": e.ParticipantID, "outcome": "ABORTED", "source": source, "prepared": false})
		return nil
	}
	var payload []byte
	if commit {
		if err := e.Resource.Commit(txnID); err != nil {
			return err
		}
		payload = en.Payload
	} else if err := e.Resource.Rollback(txnID); err != nil {
		return err
	}
	if _, err := e.Journal.Record(txnID, to, payload); err != nil {
		return err
	}
	e.forgetDoubt(txnID)
	outcome := "ABORTED"
	if commit {
		outcome = "COMMITTED"
	}
	e.Log("decided", map[string]any{"txn_id": txnID, "participant_id": e.ParticipantID, "outcome": outcome, "source": source, "prepared": true})
	return nil
}

// Status answers parallel commit's status question; a transaction neither prepared nor decided is refused durably first.
func (e *Engine) Status(clusterID, txnID, participantID string) (ppb.TxnStatusValue, error) {
	if err := e.check(clusterID, txnID, participantID); err != nil {
		return 0, err
	}
	defer e.lock(txnID)()
	en, ok := e.Journal.Get(txnID)
	if !ok {
		var err error
		if en, err = e.Journal.Record(txnID, Refused, nil); err != nil {
			return 0, err
		}
	}
	switch en.State {
	case Prepared:
		return ppb.TxnStatusValue_TXN_STATUS_PREPARED, nil
	case Committed:
		return ppb.TxnStatusValue_TXN_STATUS_COMMITTED, nil
	case Aborted:
		return ppb.TxnStatusValue_TXN_STATUS_ABORTED, nil
	}
	return ppb.TxnStatusValue_TXN_STATUS_REFUSED, nil
}

// InDoubt lists the transactions prepared and not yet decided here.
func (e *Engine) InDoubt() []string {
	out := []string{}
	for _, en := range e.Journal.Entries() {
		if en.State == Prepared {
			out = append(out, en.TxnID)
		}
	}
	return out
}

// due lists the transactions in doubt whose time to be asked about has come.
func (e *Engine) due(now time.Time) []string {
	e.doubtsMu.Lock()
	defer e.doubtsMu.Unlock()
	var out []string
	for t, d := range e.doubts {
		if !d.nextAskAt.After(now) {
			out = append(out, t)
		}
	}
	return out
}

// asked: no outcome yet for txnID; ask again after a capped, jittered backoff.
func (e *Engine) asked(txnID string, now time.Time) {
	e.doubtsMu.Lock()
	defer e.doubtsMu.Unlock()
	d := e.doubts[txnID]
	if d == nil {
		return
	}
	d.tries++
	capD := math.Min(float64(askPauseMax), float64(askPauseMin)*math.Pow(2, math.Min(float64(d.tries), 16)))
	d.nextAskAt = now.Add(time.Duration(capD/2 + e.rnd.Float64()*capD/2))
}

func (e *Engine) forgetDoubt(txnID string) {
	e.doubtsMu.Lock()
	defer e.doubtsMu.Unlock()
	delete(e.doubts, txnID)
}

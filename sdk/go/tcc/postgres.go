package tcc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"verdict/sdk/go/client"
	"verdict/sdk/go/participant"
	"verdict/sdk/go/participant/postgres"
)

// BarrierTable is the barrier's table, the TypeScript runtime's:
//
//	verdict_tcc_barrier (txn_id, branch, state, payload, expires_at_ms, updated_at)
//	PRIMARY KEY (txn_id, branch)    branch = the participant id
const BarrierTable = "verdict_tcc_barrier"

// Branch is one branch as the handlers see it.
type Branch struct {
	TxnID         string
	ParticipantID string
	// Payload is the bytes the application enlisted this participant with; Confirm and Cancel get the Try's.
	Payload []byte
}

// TryResult is what a Try may answer besides its effect: TTL, how long the
// reserve may be held without a decision (0: until the decision, however long).
type TryResult struct{ TTL time.Duration }

// Handlers run their SQL on tx, inside the barrier's local transaction.
type Handlers interface {
	// Try reserves; an error (a *Refusal for expected refusals) votes NO.
	Try(ctx context.Context, tx *sql.Tx, b Branch) (TryResult, error)
	// Confirm spends the reserve; an error rolls back, and the cluster redelivers COMMIT (never turned into a Cancel).
	Confirm(ctx context.Context, tx *sql.Tx, b Branch) error
	// Cancel releases the reserve.
	Cancel(ctx context.Context, tx *sql.Tx, b Branch) error
}

// Resource is a PostgreSQL TCC participant's resource.
type Resource struct {
	DB            *sql.DB
	participantID string
	handlers      Handlers
	locks         sync.Map
}

var _ participant.Resource = (*Resource)(nil)

// Open connects to dsn and creates the barrier table when it is missing.
func Open(ctx context.Context, dsn, participantID string, h Handlers) (*Resource, error) {
	if err := client.CheckParticipantID(participantID); err != nil {
		return nil, err
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	r := &Resource{DB: db, participantID: participantID, handlers: h}
	if err := r.ensureBarrierTable(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

func (r *Resource) ensureBarrierTable(ctx context.Context) error {
	var exists bool
	if err := r.DB.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", BarrierTable).Scan(&exists); err != nil || exists {
		return err
	}
	_, err := r.DB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+BarrierTable+" (txn_id text NOT NULL, branch text NOT NULL, "+
		"state text NOT NULL CHECK (state IN ('tried', 'confirmed', 'cancelled', 'empty-cancelled')), payload bytea, expires_at_ms bigint, "+
		"updated_at timestamptz NOT NULL, PRIMARY KEY (txn_id, branch))")
	if postgres.CreatedMeanwhile(err) {
		return nil
	}
	return err
}

// Kind is "tcc".
func (r *Resource) Kind() string { return "tcc" }

// handlerFailure: a Confirm or Cancel handler failed; its local transaction is rolled back already.
type handlerFailure struct{ error }

// step is one barrier-guarded operation in one local transaction: "" when done, or the refusal.
func (r *Resource) step(txnID, op string, tryPayload []byte) (string, error) {
	l, _ := r.locks.LoadOrStore(txnID, &sync.Mutex{})
	mu := l.(*sync.Mutex)
	mu.Lock()
	defer func() {
		mu.Unlock()
		r.locks.Delete(txnID)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx, err := r.DB.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("no PostgreSQL transaction for TCC %s of %s: %w", op, txnID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var state string
	var stored []byte
	err = tx.QueryRowContext(ctx, "SELECT state, payload FROM "+BarrierTable+" WHERE txn_id = $1 AND branch = $2 FOR UPDATE", txnID, r.participantID).Scan(&state, &stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	v := Step(txnID, state, op)
	switch v.Kind {
	case Done:
		return "", nil
	case Refuse:
		return v.Reason, nil
	}
	payload := tryPayload
	if op != OpTry {
		payload = stored
	}
	var expiresAtMs *int64
	if v.Kind == Run {
		b := Branch{TxnID: txnID, ParticipantID: r.participantID, Payload: payload}
		switch op {
		case OpTry:
			res, herr := r.handlers.Try(ctx, tx, b)
			if herr != nil {
				return "Try failed: " + herr.Error(), nil
			}
			if p := TTLProblem(res.TTL); p != "" {
				return p, nil
			}
			if res.TTL > 0 {
				at := time.Now().Add(res.TTL).UnixMilli()
				expiresAtMs = &at
			}
		case OpConfirm:
			if herr := r.handlers.Confirm(ctx, tx, b); herr != nil {
				return "", handlerFailure{fmt.Errorf("Confirm handler failed for %s: %w", txnID, herr)}
			}
		case OpCancel:
			if herr := r.handlers.Cancel(ctx, tx, b); herr != nil {
				return "", handlerFailure{fmt.Errorf("Cancel handler failed for %s: %w", txnID, herr)}
			}
		}
	}
	if state == "" {
		var p []byte
		if op == OpTry {
			p = payload
			if p == nil {
				p = []byte{}
			}
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO "+BarrierTable+" (txn_id, branch, state, payload, expires_at_ms, updated_at) VALUES ($1, $2, $3, $4, $5, statement_timestamp())", txnID, r.participantID, v.Next, p, expiresAtMs)
	} else {
		_, err = tx.ExecContext(ctx, "UPDATE "+BarrierTable+" SET state = $3, updated_at = statement_timestamp() WHERE txn_id = $1 AND branch = $2", txnID, r.participantID, v.Next)
	}
	if err != nil {
		return "", err
	}
	return "", tx.Commit()
}

// Prepare is the Try.
func (r *Resource) Prepare(txnID string, payload []byte, _ uint64) (string, error) {
	// A failure (not a refusal) may leave it unknown whether the Try's COMMIT
	// took: the engine then rolls back, which is the barrier's Cancel, and votes NO.
	return r.step(txnID, OpTry, payload)
}

// Commit is the Confirm; a refusal is an error, so the DECISION is not acknowledged and an operator looks.
func (r *Resource) Commit(txnID string) error {
	reason, err := r.step(txnID, OpConfirm, nil)
	if err == nil && reason != "" {
		err = errors.New(reason)
	}
	return err
}

// Rollback is the Cancel (an empty rollback when no Try is on record).
func (r *Resource) Rollback(txnID string) error {
	reason, err := r.step(txnID, OpCancel, nil)
	if err == nil && reason != "" {
		err = errors.New(reason)
	}
	return err
}

// Restore has nothing to do: the barrier and the effects are in PostgreSQL.
func (r *Resource) Restore(string, string, []byte) error { return nil }

// PreparedHere lists the reserves held (tried, neither confirmed nor cancelled), so a Try whose YES never left is asked about too.
func (r *Resource) PreparedHere() ([]string, error) {
	return r.held("")
}

// Expired lists the held reserves whose TTL ran out.
func (r *Resource) Expired(now time.Time) ([]string, error) {
	return r.held(fmt.Sprintf(" AND expires_at_ms IS NOT NULL AND expires_at_ms <= %d", now.UnixMilli()))
}

func (r *Resource) held(and string) ([]string, error) {
	rows, err := r.DB.Query("SELECT txn_id FROM "+BarrierTable+" WHERE branch = $1 AND state = 'tried'"+and+" ORDER BY updated_at LIMIT 100000", r.participantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ReserveTTL is how long txnID's reserve has left now, read from its barrier row (ok false: not held, or no TTL).
func (r *Resource) ReserveTTL(txnID string) (time.Duration, bool, error) {
	var at sql.NullInt64
	err := r.DB.QueryRow("SELECT expires_at_ms FROM "+BarrierTable+" WHERE txn_id = $1 AND branch = $2 AND state = 'tried'", txnID, r.participantID).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !at.Valid) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return time.Until(time.UnixMilli(at.Int64)), true, nil
}

var _ participant.ReserveTTLReader = (*Resource)(nil)

// Close closes the pool.
func (r *Resource) Close() error { return r.DB.Close() }

// WatchExpiries runs until ctx ends: every interval, each reserve whose TTL
// ran out is settled through the cluster, never by a bare timer (docs/tcc.md,
// "Reserves with a time to live"): Coordinator.Abort asks the leader to log
// ABORT unless a decision is logged, and the answer is applied — Cancel on
// ABORTED, Confirm on COMMITTED. While the cluster cannot be reached the
// reserve stays held, and is asked about again next round.
func WatchExpiries(ctx context.Context, p *participant.Participant, r *Resource, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		expired, err := r.Expired(time.Now())
		if err != nil {
			p.Engine.Log("tcc-expiry-scan-failed", map[string]any{"participant_id": p.Engine.ParticipantID, "error": err.Error()})
			continue
		}
		for _, txnID := range expired {
			a, err := p.Client.Abort(ctx, txnID, "the TCC reserve's TTL ran out at "+p.Engine.ParticipantID)
			if err != nil || (a.Outcome != client.Committed && a.Outcome != client.Aborted) {
				p.Engine.Log("tcc-expiry-ask-failed", map[string]any{"txn_id": txnID, "participant_id": p.Engine.ParticipantID, "error": fmt.Sprint(err), "outcome": a.Outcome})
				continue
			}
			err = p.Engine.Decide(p.Engine.ClusterID(), txnID, p.Engine.ParticipantID, a.Outcome == client.Committed, "tcc-expiry")
			p.Engine.Log("tcc-expired", map[string]any{"txn_id": txnID, "participant_id": p.Engine.ParticipantID, "outcome": a.Outcome, "error": fmt.Sprint(err)})
		}
	}
}

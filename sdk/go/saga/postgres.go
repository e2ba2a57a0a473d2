package saga

// The step service's inbox in PostgreSQL, as the TypeScript step service's
// (src/saga/postgres-inbox.ts), table for table: the same rules as the file
// inbox (inbox.go), with the record a row of verdict_saga_inbox inserted in
// the same local transaction as the step's effect. Both commit, or neither:
// a repeated key finds the row and gets the stored answer, and the effect
// never runs twice.
//
// The action and the compensation of one step take the same
// transaction-level advisory lock, so an action and its compensation
// arriving together are ordered: the later one sees the earlier one's row
// (an empty compensation, or a refused action). A saga's rows are deleted
// when the orchestrator says it ended, in the transaction that records the
// end in verdict_saga_ended (which then refuses a late duplicate of one of
// its calls). Calls of different steps run side by side, up to the pool's
// connections.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"verdict/sdk/go/participant/postgres"
)

// PgInboxSchema is the TypeScript step service's schema of the inbox.
var PgInboxSchema = []string{
	`CREATE TABLE IF NOT EXISTS verdict_saga_inbox (
  key text PRIMARY KEY,
  saga_id text NOT NULL,
  step integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('action', 'compensate')),
  status text NOT NULL CHECK (status IN ('done', 'failed', 'empty', 'refused')),
  output text NOT NULL DEFAULT '',
  reason text NOT NULL DEFAULT '',
  recorded_at timestamptz NOT NULL DEFAULT now()
)`,
	`CREATE INDEX IF NOT EXISTS verdict_saga_inbox_saga ON verdict_saga_inbox (saga_id)`,
	`CREATE TABLE IF NOT EXISTS verdict_saga_ended (
  saga_id text PRIMARY KEY,
  ended_at timestamptz NOT NULL DEFAULT now()
)`,
}

// PgHandler does a step's work inside the inbox's transaction: apply the
// effect with tx and answer Done (its effect string is not used: the
// effect is what tx wrote), or answer Failed having applied nothing (the
// inbox rolls back to before the handler). An error is transient: nothing
// is recorded and the orchestrator calls again.
type PgHandler func(ctx context.Context, tx *sql.Tx, r Request) (Result, error)

// PgStep is one named step of a PostgreSQL step service.
type PgStep struct {
	Action     PgHandler
	Compensate PgHandler
}

// PgInbox is the inbox in one PostgreSQL database.
type PgInbox struct {
	DB *sql.DB
}

// OpenPgInbox creates the inbox's tables when missing.
func OpenPgInbox(ctx context.Context, db *sql.DB) (*PgInbox, error) {
	for _, q := range PgInboxSchema {
		if _, err := db.ExecContext(ctx, q); err != nil && !postgres.CreatedMeanwhile(err) {
			return nil, err
		}
	}
	return &PgInbox{DB: db}, nil
}

type pgRow struct {
	key, kind, status, output, reason string
}

// Handle answers a call in one local transaction: from its row, or by the rules, or by running h and recording its answer with its effect.
func (in *PgInbox) Handle(ctx context.Context, req Request, h PgHandler) (a Answer, err error) {
	tx, err := in.DB.BeginTx(ctx, nil)
	if err != nil {
		return Answer{}, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// One lock per step: its action and its compensation never run side by side.
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", fmt.Sprintf("%s/%d", req.SagaID, req.Step)); err != nil {
		return Answer{}, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT key, kind, status, output, reason FROM verdict_saga_inbox WHERE saga_id = $1 AND step = $2", req.SagaID, req.Step)
	if err != nil {
		return Answer{}, err
	}
	var seen, other *pgRow
	for rows.Next() {
		var r pgRow
		if err := rows.Scan(&r.key, &r.kind, &r.status, &r.output, &r.reason); err != nil {
			rows.Close()
			return Answer{}, err
		}
		if r.key == req.Key {
			seen = &r
		} else if r.kind != req.Kind {
			other = &r
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Answer{}, err
	}
	if seen != nil {
		return answerOf(Record{Status: seen.status, Output: seen.output, Reason: seen.reason}), tx.Commit()
	}
	var ended bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM verdict_saga_ended WHERE saga_id = $1)", req.SagaID).Scan(&ended); err != nil {
		return Answer{}, err
	}
	if ended {
		return Answer{}, fmt.Errorf("saga %s has ended; its step %d %s is not run again", req.SagaID, req.Step, req.Kind)
	}
	rec := Record{Status: StatusDone}
	switch {
	case req.Kind == Action && other != nil:
		rec.Status = StatusRefused
		rec.Reason = fmt.Sprintf("step %d of saga %s was compensated before its action arrived; the action is refused", req.Step, req.SagaID)
	case req.Kind == Compensate && other == nil:
		rec.Status = StatusEmpty
		rec.Reason = "the action never ran here: an empty compensation is recorded"
	case req.Kind == Compensate && other.status != StatusDone:
		rec.Status = StatusEmpty
		rec.Reason = fmt.Sprintf("the action answered %s: nothing to compensate", strings.ToUpper(other.status))
	default:
		if _, err := tx.ExecContext(ctx, "SAVEPOINT step"); err != nil {
			return Answer{}, err
		}
		res, err := h(ctx, tx, req)
		if err != nil {
			return Answer{}, err
		}
		if res.failed && req.Kind == Compensate {
			return Answer{}, fmt.Errorf("a compensation cannot answer FAILED (%s): it is retried until it is done", res.reason)
		}
		if res.failed {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT step"); err != nil {
				return Answer{}, err
			}
			rec.Status, rec.Reason = StatusFailed, res.reason
		} else {
			rec.Output = res.output
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO verdict_saga_inbox (key, saga_id, step, kind, status, output, reason) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		req.Key, req.SagaID, req.Step, req.Kind, rec.Status, rec.Output, rec.Reason); err != nil {
		return Answer{}, err
	}
	if err := tx.Commit(); err != nil {
		return Answer{}, err
	}
	return answerOf(rec), nil
}

// End drops the saga's rows and remembers the end, in one transaction; a repeated end changes nothing.
func (in *PgInbox) End(ctx context.Context, sagaID string) error {
	return in.EndMany(ctx, []string{sagaID})
}

// EndMany is End for many sagas in one transaction: one commit for the batch.
func (in *PgInbox) EndMany(ctx context.Context, sagaIDs []string) error {
	if len(sagaIDs) == 0 {
		return nil
	}
	tx, err := in.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, sagaID := range sagaIDs {
		if _, err = tx.ExecContext(ctx, "DELETE FROM verdict_saga_inbox WHERE saga_id = $1", sagaID); err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO verdict_saga_ended (saga_id) VALUES ($1) ON CONFLICT DO NOTHING", sagaID)
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

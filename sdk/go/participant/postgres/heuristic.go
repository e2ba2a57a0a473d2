package postgres

// Heuristic resolution at a PostgreSQL participant (R4), as the TypeScript
// tools (src/participant/heuristic.ts) and the Python SDK's
// (sdk/python/verdict/heuristic.py) do it: the day the cluster is
// unreachable and a prepared transaction holds locks nobody can wait for any
// longer, an operator commits or rolls it back by hand (ResolveByHand, or
// the command verdict-pg-resolve).
//
// The act is recorded where the data lives, in the table verdict_heuristics
// (the TypeScript participant's table, row for row), committed before COMMIT
// PREPARED / ROLLBACK PREPARED: PostgreSQL cannot run those inside a
// transaction block, so a crash in between leaves a recorded act whose gid
// is still prepared, and running the command again finishes it. An act is
// never reversed, and a repeated one answers the first record. The
// participant runtime reports each act to the cluster
// (Coordinator.ReportHeuristic), which compares it with its decision
// (HEURCOM, HEURRB, HEURMIX, HEURHAZ); a decision that reaches the
// participant after the act is acknowledged whatever it is, since the
// conflict, if any, is the cluster's to record.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"verdict/sdk/go/participant"
)

const (
	// HeuristicTable is the table of acts done by hand.
	HeuristicTable = "verdict_heuristics"
	// OperatorCharsMax and ReasonCharsMax are the cluster's bounds (src/domain/text-bounds.ts).
	OperatorCharsMax = 128
	ReasonCharsMax   = 1000
	// unreportedRowsMax: acts read for one round of reports.
	unreportedRowsMax = 100
)

// HeuristicError is a refusal of ResolveByHand, with the reason and what to do.
type HeuristicError struct{ Reason string }

func (e *HeuristicError) Error() string { return e.Reason }

// EnsureHeuristicTable creates the table of acts when missing (the TypeScript participant's definition).
func EnsureHeuristicTable(ctx context.Context, db *sql.DB) error {
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", HeuristicTable).Scan(&exists); err != nil || exists {
		return err
	}
	_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+HeuristicTable+" (gid text PRIMARY KEY, txn_id text NOT NULL, "+
		"outcome text NOT NULL CHECK (outcome IN ('committed', 'aborted')), operator text NOT NULL, reason text NOT NULL, at timestamptz NOT NULL, reported_at timestamptz)")
	if CreatedMeanwhile(err) {
		return nil
	}
	return err
}

const actColumns = "gid, txn_id, outcome, operator, reason, (extract(epoch from at) * 1000)::bigint, (extract(epoch from reported_at) * 1000)::bigint"

type scanner interface{ Scan(dest ...any) error }

func scanAct(s scanner) (participant.HeuristicAct, error) {
	var a participant.HeuristicAct
	var reported sql.NullInt64
	if err := s.Scan(&a.GID, &a.TxnID, &a.Outcome, &a.Operator, &a.Reason, &a.AtMs, &reported); err != nil {
		return a, err
	}
	a.ReportedAtMs = uint64(reported.Int64)
	return a, nil
}

// ActOf is the act recorded for gid; nil when none.
func ActOf(ctx context.Context, db *sql.DB, gid string) (*participant.HeuristicAct, error) {
	a, err := scanAct(db.QueryRowContext(ctx, "SELECT "+actColumns+" FROM "+HeuristicTable+" WHERE gid = $1", gid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// UnreportedHeuristics are the acts done by hand here that the cluster has not acknowledged yet, oldest first.
func (r *Resource) UnreportedHeuristics() ([]participant.HeuristicAct, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := r.DB.QueryContext(ctx, "SELECT "+actColumns+" FROM "+HeuristicTable+" WHERE starts_with(gid, $1) AND reported_at IS NULL ORDER BY at LIMIT $2", r.prefix, unreportedRowsMax)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []participant.HeuristicAct
	for rows.Next() {
		a, err := scanAct(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// MarkHeuristicReported records that the cluster acknowledged the act of gid.
func (r *Resource) MarkHeuristicReported(gid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.DB.ExecContext(ctx, "UPDATE "+HeuristicTable+" SET reported_at = statement_timestamp() WHERE gid = $1 AND reported_at IS NULL", gid)
	return err
}

// resolvedByHand: T's gid is gone and an act is recorded for it: the decision is acknowledged, the conflict is the cluster's to record.
func (r *Resource) resolvedByHand(ctx context.Context, gid string) (bool, error) {
	a, err := ActOf(ctx, r.DB, gid)
	return a != nil, err
}

func checkText(operator, reason string) error {
	if strings.TrimSpace(operator) == "" || utf8.RuneCountInString(operator) > OperatorCharsMax {
		return &HeuristicError{fmt.Sprintf("the operator must be 1-%d characters", OperatorCharsMax)}
	}
	if strings.TrimSpace(reason) == "" || utf8.RuneCountInString(reason) > ReasonCharsMax {
		return &HeuristicError{fmt.Sprintf("the reason must be 1-%d characters: it is recorded with the act and reported to the cluster", ReasonCharsMax)}
	}
	return nil
}

// ResolveByHand commits (commit) or rolls back the prepared transaction
// target (a transaction id, or its gid) of participantID in the database of
// dsn: the act, and whether this call did it. It refuses to reverse an
// earlier act, answers a repeated one with the first record, and refuses
// when nothing is prepared; else it records the act, then does it.
func ResolveByHand(ctx context.Context, dsn, clusterID, participantID, target string, commit bool, operator, reason string) (participant.HeuristicAct, bool, error) {
	none := participant.HeuristicAct{}
	if err := checkText(operator, reason); err != nil {
		return none, false, err
	}
	outcome := "aborted"
	if commit {
		outcome = "committed"
	}
	prefix := GIDPrefix(clusterID, participantID)
	txnID, gid := target, GIDOf(prefix, target)
	if strings.HasPrefix(target, "verdict:") {
		if !strings.HasPrefix(target, prefix) {
			return none, false, &HeuristicError{fmt.Sprintf("gid %s is not a gid of participant %q of cluster %q (its gids start with %s); check the participant and cluster ids", target, participantID, clusterID, prefix)}
		}
		if txnID = ParseGID(prefix, target); txnID == "" {
			return none, false, &HeuristicError{fmt.Sprintf("gid %s is hashed and does not name its transaction; give the transaction id instead", target)}
		}
		gid = target
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return none, false, &HeuristicError{fmt.Sprintf("cannot connect to PostgreSQL: %v", err)}
	}
	defer db.Close()
	// One connection: the act's record and the act run in the same session, one after the other.
	db.SetMaxOpenConns(1)
	if err := EnsureHeuristicTable(ctx, db); err != nil {
		return none, false, &HeuristicError{fmt.Sprintf("cannot read or create %s: %v", HeuristicTable, err)}
	}
	var prepared bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE gid = $1 AND database = current_database())", gid).Scan(&prepared); err != nil {
		return none, false, err
	}
	earlier, err := ActOf(ctx, db, gid)
	if err != nil {
		return none, false, err
	}
	if earlier != nil && earlier.Outcome != outcome {
		return none, false, &HeuristicError{fmt.Sprintf("transaction %s (gid %s) was already resolved by hand as %s by %s; an act is not reversed", txnID, gid, earlier.Outcome, earlier.Operator)}
	}
	if !prepared {
		if earlier != nil {
			return *earlier, false, nil
		}
		return none, false, &HeuristicError{fmt.Sprintf("transaction %s is not prepared in this database (no %s in pg_prepared_xacts): it was already committed or rolled back, or never prepared here; nothing was done", txnID, gid)}
	}
	act := participant.HeuristicAct{TxnID: txnID, GID: gid, Outcome: outcome, Operator: operator, Reason: reason, AtMs: uint64(time.Now().UnixMilli())}
	if earlier != nil {
		act = *earlier
	} else if _, err := db.ExecContext(ctx, "INSERT INTO "+HeuristicTable+" (gid, txn_id, outcome, operator, reason, at) VALUES ($1, $2, $3, $4, $5, to_timestamp($6::bigint / 1000.0)) ON CONFLICT (gid) DO NOTHING",
		act.GID, act.TxnID, act.Outcome, act.Operator, act.Reason, act.AtMs); err != nil {
		return none, false, err
	}
	command := "ROLLBACK PREPARED"
	if commit {
		command = "COMMIT PREPARED"
	}
	// The gid is of the safe alphabet (GIDOf): it never needs quoting beyond the literal's.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("%s '%s'", command, gid)); err != nil {
		return none, false, &HeuristicError{fmt.Sprintf("the act is recorded but %s %s failed: %v; run the command again", command, gid, err)}
	}
	return act, true, nil
}

var _ participant.HeuristicSource = (*Resource)(nil)

// Package postgres is the PostgreSQL resource of the participant runtime, on
// database/sql with lib/pq: PostgreSQL's own two-phase commit.
//
//   - Work for T runs in an open PostgreSQL transaction bound to T:
//     Resource.Work(ctx, txnID) gives T's *sql.Tx, kept open until PREPARE;
//     or the payload {"sql": [...]} runs at PREPARE (the same payload as the
//     TypeScript and Python resources).
//   - PREPARE: T's marker row, then PREPARE TRANSACTION 'gid'. PostgreSQL
//     flushes the PREPARE record to its WAL before it answers, and the engine
//     journals "prepared" (fsync) before it votes YES.
//   - COMMIT: COMMIT PREPARED 'gid'; ABORT: ROLLBACK PREPARED 'gid', or a
//     plain ROLLBACK when T never got to PREPARE.
//   - Redelivered decisions are idempotent through the marker row, written
//     inside T: it exists after the fact exactly when T committed. A COMMIT
//     whose gid is gone is acknowledged when the marker is there and refused
//     when it is not (T was rolled back here by hand: a heuristic hazard),
//     and the reverse for ABORT.
//   - Heuristic acts: an operator may commit or roll back a prepared
//     transaction by hand (ResolveByHand, the command verdict-pg-resolve);
//     the act is recorded in verdict_heuristics, a later decision for it is
//     acknowledged, and the runtime reports the act to the cluster
//     (heuristic.go).
//   - Recovery: PreparedHere lists this participant's gids in
//     pg_prepared_xacts (this database), which the engine resolves with the
//     cluster beside its journal.
//
// With max_prepared_transactions = 0 the resource refuses to start and says why.
package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

const (
	// PayloadStatementsMax bounds the statements of one payload.
	PayloadStatementsMax = 1_000
	// undefinedObject is the SQLSTATE of "prepared transaction with identifier ... does not exist".
	undefinedObject = "42704"
)

var markerTablePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ConfigError is a refusal to start, with the reason and the fix.
type ConfigError struct{ Reason string }

func (e *ConfigError) Error() string { return "FAILED_PRECONDITION: " + e.Reason }

// HeuristicHazardError is a decision that finds its transaction already ended the other way here (by an operator's hand): never ACKed silently.
type HeuristicHazardError struct{ Reason string }

func (e *HeuristicHazardError) Error() string { return e.Reason }

// Options of a Resource.
type Options struct {
	// MarkerTable is the marker table's name (verdict_markers when "").
	MarkerTable string
	// OpenTxnsMax bounds the PostgreSQL transactions open at once through Work (64 when 0).
	OpenTxnsMax int
	// OpenTxnTimeout rolls back work begun with Work and never prepared (60 s when 0): the backstop for a transaction nobody decides.
	OpenTxnTimeout time.Duration
	// MarkerRetention: markers older than this are deleted (24 h when 0), far beyond the time the cluster keeps redelivering a decision.
	MarkerRetention time.Duration
	// StuckAfter: a prepared transaction older than this is stuck, and alerted on (5 min when 0).
	StuckAfter time.Duration
	// UpkeepEvery: how often the markers are cleaned up and pg_prepared_xacts is scanned (1 min when 0).
	UpkeepEvery time.Duration
	// Log hears the upkeep's events (prepared-stuck, markers-deleted, open-txn-expired, upkeep-failed); JSON lines on stderr when nil.
	Log func(event string, fields map[string]any)
}

// Resource is one participant's data in one PostgreSQL database.
type Resource struct {
	DB     *sql.DB
	prefix string
	table  string
	max    int
	o      Options
	mu     sync.Mutex
	open   map[string]*sql.Tx
	// gone holds the transactions whose open work was rolled back (expired or aborted before PREPARE), oldest first, so later work for them is refused.
	gone      map[string]bool
	goneOrder []string
	stats     PreparedStats
	stop      chan struct{}
	stopped   sync.WaitGroup
}

// Open connects to dsn (a libpq connection string or URL), checks the
// server, and creates the marker table if it is missing.
func Open(ctx context.Context, dsn, clusterID, participantID string, o Options) (*Resource, error) {
	if clusterID == "" || participantID == "" {
		return nil, &ConfigError{"a PostgreSQL resource needs the cluster id and the participant id (its gids name both)"}
	}
	if o.MarkerTable == "" {
		o.MarkerTable = "verdict_markers"
	}
	if !markerTablePattern.MatchString(o.MarkerTable) {
		return nil, &ConfigError{fmt.Sprintf("marker table name %q must be a lower-case SQL identifier", o.MarkerTable)}
	}
	if o.OpenTxnsMax <= 0 {
		o.OpenTxnsMax = 64
	}
	o = withUpkeepDefaults(o)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	r := &Resource{DB: db, prefix: GIDPrefix(clusterID, participantID), table: o.MarkerTable, max: o.OpenTxnsMax, o: o, open: map[string]*sql.Tx{}, gone: map[string]bool{}, stop: make(chan struct{})}
	if err := r.checkServer(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := r.ensureMarkerTable(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := EnsureHeuristicTable(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	r.stopped.Add(1)
	go r.upkeepLoop()
	return r, nil
}

func (r *Resource) checkServer(ctx context.Context) error {
	var mpt int
	if err := r.DB.QueryRowContext(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&mpt); err != nil {
		return err
	}
	if mpt == 0 {
		return &ConfigError{"PostgreSQL has max_prepared_transactions = 0, so every PREPARE TRANSACTION fails; " +
			"set max_prepared_transactions to at least the number of transactions open at once in postgresql.conf or with ALTER SYSTEM, and restart PostgreSQL"}
	}
	return nil
}

func (r *Resource) ensureMarkerTable(ctx context.Context) error {
	var exists bool
	if err := r.DB.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", r.table).Scan(&exists); err != nil || exists {
		return err
	}
	if _, err := r.DB.ExecContext(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (gid text PRIMARY KEY, txn_id text NOT NULL, prepared_at timestamptz NOT NULL, committed_at timestamptz)", r.table)); err != nil && !CreatedMeanwhile(err) {
		return err
	}
	_, err := r.DB.ExecContext(ctx, fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s_age ON %s ((coalesce(committed_at, prepared_at)))", r.table, r.table))
	if CreatedMeanwhile(err) {
		return nil
	}
	return err
}

// CreatedMeanwhile: another process created the same table or index at the
// same moment (the saga inbox and the TCC barrier use it too). IF NOT EXISTS does not cover that race: the loser gets a
// unique violation on the catalog (23505), "relation already exists" (42P07)
// or "type already exists" (42710, the table's row type).
func CreatedMeanwhile(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07" || pe.Code == "42710")
}

// Kind is "postgres".
func (r *Resource) Kind() string { return "postgres" }

// GID is txnID's gid here.
func (r *Resource) GID(txnID string) string { return GIDOf(r.prefix, txnID) }

// Work is T's open PostgreSQL transaction (begun on first use); T is prepared at its PREPARE.
func (r *Resource) Work(ctx context.Context, txnID string) (*sql.Tx, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tx := r.open[txnID]; tx != nil {
		return tx, nil
	}
	if r.gone[txnID] {
		return nil, fmt.Errorf("the open PostgreSQL transaction of %s was rolled back (it timed out, or was aborted before its PREPARE): its work cannot go on", txnID)
	}
	if len(r.open) >= r.max {
		return nil, fmt.Errorf("%d PostgreSQL transactions are open, the bound (OpenTxnsMax); try again later", len(r.open))
	}
	// Not bound to ctx: the transaction lives until its PREPARE or ABORT, not the caller's request.
	tx, err := r.DB.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	r.open[txnID] = tx
	time.AfterFunc(r.o.OpenTxnTimeout, func() { r.expire(txnID, tx) })
	return tx, nil
}

// ParsePayload gives the payload's statements; nil for an empty payload
// (work done through Work); a non-empty reason when it is refused.
func ParsePayload(payload []byte) (stmts []string, reason string) {
	if len(payload) == 0 {
		return nil, ""
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(payload, &v); err != nil || v == nil {
		return nil, `payload must be a JSON object like {"sql": ["INSERT ..."]}, or empty`
	}
	for k := range v {
		if k != "sql" {
			return nil, fmt.Sprintf(`payload has an unknown field %q; allowed: sql`, k)
		}
	}
	if err := json.Unmarshal(v["sql"], &stmts); err != nil || stmts == nil {
		return nil, `payload "sql" must be an array of non-empty SQL strings`
	}
	for _, s := range stmts {
		if strings.TrimSpace(s) == "" {
			return nil, `payload "sql" must be an array of non-empty SQL strings`
		}
	}
	if len(stmts) > PayloadStatementsMax {
		return nil, fmt.Sprintf("payload has %d statements; at most %d", len(stmts), PayloadStatementsMax)
	}
	return stmts, ""
}

func pgReason(err error) string {
	var pe *pq.Error
	if errors.As(err, &pe) {
		return fmt.Sprintf("PostgreSQL: %s %s", pe.Code, pe.Message)
	}
	return "PostgreSQL: " + err.Error()
}

// Prepare runs the payload's statements (or takes T's open transaction), writes the marker and prepares T.
func (r *Resource) Prepare(txnID string, payload []byte, timeoutMs uint64) (string, error) {
	stmts, reason := ParsePayload(payload)
	if reason != "" {
		return reason, nil
	}
	r.mu.Lock()
	tx := r.open[txnID]
	delete(r.open, txnID)
	r.mu.Unlock()
	if tx == nil {
		if stmts == nil {
			// Preparing an empty transaction would commit T without its work.
			return fmt.Sprintf("no open PostgreSQL transaction for %s here (its work failed, or this process restarted since) and the payload has no statements", txnID), nil
		}
		var err error
		if tx, err = r.DB.BeginTx(context.Background(), nil); err != nil {
			return pgReason(err), nil
		}
	}
	gid := r.GID(txnID)
	fail := func(err error) (string, error) {
		_ = tx.Rollback()
		return pgReason(err), nil
	}
	if timeoutMs > 0 {
		// Bounded by the transaction's budget: a statement waiting on a lock votes NO instead of waiting for ever.
		if _, err := tx.Exec(fmt.Sprintf("SET LOCAL statement_timeout = %d", timeoutMs)); err != nil {
			return fail(err)
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			return fail(err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("INSERT INTO %s (gid, txn_id, prepared_at) VALUES ($1, $2, now())", r.table), gid, txnID); err != nil {
		return fail(err)
	}
	// The gid is in the safe alphabet (GIDOf): it never needs quoting beyond the literal's.
	if _, err := tx.Exec(fmt.Sprintf("PREPARE TRANSACTION '%s'", gid)); err != nil {
		return fail(err)
	}
	// The session is out of its transaction now; this COMMIT only hands the connection back to the pool.
	_ = tx.Commit()
	return "", nil
}

func (r *Resource) marker(gid string) (bool, error) {
	var one int
	err := r.DB.QueryRow(fmt.Sprintf("SELECT 1 FROM %s WHERE gid = $1", r.table), gid).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func isUndefinedObject(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && string(pe.Code) == undefinedObject
}

// Commit is COMMIT PREPARED; idempotent through the marker row.
func (r *Resource) Commit(txnID string) error {
	gid := r.GID(txnID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.DB.ExecContext(ctx, fmt.Sprintf("COMMIT PREPARED '%s'", gid))
	if err == nil {
		_, err = r.DB.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET committed_at = now() WHERE gid = $1", r.table), gid)
		return err
	}
	if !isUndefinedObject(err) {
		return err
	}
	if byHand, herr := r.resolvedByHand(ctx, gid); herr != nil || byHand {
		// Resolved by hand: acknowledged; the conflict, if any, is the cluster's to record from the report.
		return herr
	}
	ok, merr := r.marker(gid)
	if merr != nil {
		return merr
	}
	if !ok {
		return &HeuristicHazardError{fmt.Sprintf("COMMIT of %s: %s is no longer prepared and has no marker: it was rolled back here by hand (HEURRB)", txnID, gid)}
	}
	return nil
}

// Rollback is ROLLBACK PREPARED, or a plain ROLLBACK of T's open transaction; idempotent.
func (r *Resource) Rollback(txnID string) error {
	r.mu.Lock()
	tx := r.open[txnID]
	delete(r.open, txnID)
	if tx != nil {
		r.markGone(txnID)
	}
	r.mu.Unlock()
	if tx != nil {
		err := tx.Rollback()
		if errors.Is(err, sql.ErrTxDone) {
			return nil
		}
		return err
	}
	gid := r.GID(txnID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.DB.ExecContext(ctx, fmt.Sprintf("ROLLBACK PREPARED '%s'", gid))
	if err == nil || !isUndefinedObject(err) {
		return err
	}
	if byHand, herr := r.resolvedByHand(ctx, gid); herr != nil || byHand {
		return herr
	}
	ok, merr := r.marker(gid)
	if merr != nil {
		return merr
	}
	if ok {
		return &HeuristicHazardError{fmt.Sprintf("ABORT of %s: %s is no longer prepared and its marker is there: it was committed here by hand (HEURCOM)", txnID, gid)}
	}
	return nil
}

// Restore has nothing to do: PostgreSQL keeps the data.
func (r *Resource) Restore(string, string, []byte) error { return nil }

// PreparedHere lists the readable gids of this participant in pg_prepared_xacts (a hashed gid is found through the journal).
func (r *Resource) PreparedHere() ([]string, error) {
	rows, err := r.DB.Query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY prepared LIMIT 100000", r.prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var gid string
		if err := rows.Scan(&gid); err != nil {
			return nil, err
		}
		if t := ParseGID(r.prefix, gid); t != "" {
			out = append(out, t)
		}
	}
	return out, rows.Err()
}

// Close stops the upkeep, rolls back the transactions still open through Work and closes the pool.
func (r *Resource) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.stopped.Wait()
	r.mu.Lock()
	for t, tx := range r.open {
		_ = tx.Rollback()
		delete(r.open, t)
	}
	r.mu.Unlock()
	return r.DB.Close()
}

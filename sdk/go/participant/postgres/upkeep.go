package postgres

// The resource's upkeep, as the TypeScript resource's recovery monitor does
// it (src/participant/postgres.ts, docs/postgres.md): every UpkeepEvery it
// deletes this participant's markers older than MarkerRetention (in bounded
// batches, so one clean-up never holds a long lock) and scans
// pg_prepared_xacts for this participant's gids, raising "prepared-stuck"
// for those older than StuckAfter (PreparedStats has the numbers of the last
// scan). Resolving them is the runtime's: it asks the cluster about every
// prepared transaction until it learns the outcome (R4). Separately, work
// begun with Work and never prepared is rolled back after OpenTxnTimeout,
// and later work or a PREPARE without statements for it is refused.

import (
	"context"
	"database/sql"
	"time"

	"verdict/sdk/go/participant"
)

const (
	// markerCleanupBatch: markers deleted per statement.
	markerCleanupBatch = 10_000
	// markerCleanupRounds bounds the statements of one clean-up.
	markerCleanupRounds = 100
	// goneMax: rolled-back transactions remembered to refuse later work for them.
	goneMax = 10_000
	// stuckNamedMax: stuck gids named in one alert.
	stuckNamedMax = 10
)

// PreparedStats is what the last scan of pg_prepared_xacts found of this participant's gids.
type PreparedStats struct {
	Count int
	// OldestAge is the age of the oldest prepared transaction (0: none).
	OldestAge time.Duration
	// Stuck counts those older than StuckAfter.
	Stuck int
	// ScannedAtMs is when the scan ran (0: not yet).
	ScannedAtMs int64
}

func withUpkeepDefaults(o Options) Options {
	if o.OpenTxnTimeout <= 0 {
		o.OpenTxnTimeout = 60 * time.Second
	}
	if o.MarkerRetention <= 0 {
		o.MarkerRetention = 24 * time.Hour
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = 5 * time.Minute
	}
	if o.UpkeepEvery <= 0 {
		o.UpkeepEvery = time.Minute
	}
	if o.Log == nil {
		o.Log = participant.JSONLog
	}
	return o
}

// markGone remembers a transaction whose open work was rolled back; r.mu is held.
func (r *Resource) markGone(txnID string) {
	if r.gone[txnID] {
		return
	}
	r.gone[txnID] = true
	r.goneOrder = append(r.goneOrder, txnID)
	for len(r.goneOrder) > goneMax {
		delete(r.gone, r.goneOrder[0])
		r.goneOrder = r.goneOrder[1:]
	}
}

// expire rolls back T's open transaction when it is still the one Work began and still not prepared.
func (r *Resource) expire(txnID string, tx *sql.Tx) {
	r.mu.Lock()
	if r.open[txnID] != tx {
		r.mu.Unlock()
		return
	}
	delete(r.open, txnID)
	r.markGone(txnID)
	r.mu.Unlock()
	_ = tx.Rollback()
	r.o.Log("open-txn-expired", map[string]any{"txn_id": txnID, "timeout_ms": r.o.OpenTxnTimeout.Milliseconds()})
}

// CleanupMarkers deletes this participant's markers older than the retention, in bounded batches; how many went.
func (r *Resource) CleanupMarkers(ctx context.Context) (int64, error) {
	var total int64
	for i := 0; i < markerCleanupRounds; i++ {
		res, err := r.DB.ExecContext(ctx, "DELETE FROM "+r.table+" WHERE gid IN (SELECT gid FROM "+r.table+
			" WHERE starts_with(gid, $1) AND coalesce(committed_at, prepared_at) < statement_timestamp() - make_interval(secs => $2) LIMIT $3)",
			r.prefix, r.o.MarkerRetention.Seconds(), markerCleanupBatch)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < markerCleanupBatch {
			break
		}
	}
	return total, nil
}

// ScanPrepared reads this participant's prepared transactions (oldest first), updates PreparedStats, and answers the stuck gids (at most stuckNamedMax).
func (r *Resource) ScanPrepared(ctx context.Context) (PreparedStats, []string, error) {
	rows, err := r.DB.QueryContext(ctx, "SELECT gid, (extract(epoch from (statement_timestamp() - prepared)) * 1000)::bigint FROM pg_prepared_xacts "+
		"WHERE database = current_database() AND starts_with(gid, $1) ORDER BY prepared LIMIT 100000", r.prefix)
	if err != nil {
		return PreparedStats{}, nil, err
	}
	defer rows.Close()
	s := PreparedStats{ScannedAtMs: time.Now().UnixMilli()}
	var stuck []string
	for rows.Next() {
		var gid string
		var ageMs int64
		if err := rows.Scan(&gid, &ageMs); err != nil {
			return PreparedStats{}, nil, err
		}
		age := time.Duration(ageMs) * time.Millisecond
		s.Count++
		if s.Count == 1 {
			s.OldestAge = age
		}
		if age >= r.o.StuckAfter {
			s.Stuck++
			if len(stuck) < stuckNamedMax {
				stuck = append(stuck, gid)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return PreparedStats{}, nil, err
	}
	r.mu.Lock()
	r.stats = s
	r.mu.Unlock()
	return s, stuck, nil
}

// PreparedStats is what the last scan found.
func (r *Resource) PreparedStats() PreparedStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// upkeep is one round: the markers' clean-up, then the scan and its alert.
func (r *Resource) upkeep(stopped context.Context) {
	ctx, cancel := context.WithTimeout(stopped, r.o.UpkeepEvery)
	defer cancel()
	if n, err := r.CleanupMarkers(ctx); err != nil && stopped.Err() == nil {
		r.o.Log("upkeep-failed", map[string]any{"what": "marker clean-up", "error": err.Error()})
	} else if n > 0 {
		r.o.Log("markers-deleted", map[string]any{"deleted": n, "retention_ms": r.o.MarkerRetention.Milliseconds()})
	}
	s, stuck, err := r.ScanPrepared(ctx)
	if err != nil {
		if stopped.Err() != nil {
			return
		}
		r.o.Log("upkeep-failed", map[string]any{"what": "pg_prepared_xacts scan", "error": err.Error()})
		return
	}
	if s.Stuck > 0 {
		r.o.Log("prepared-stuck", map[string]any{"stuck": s.Stuck, "prepared": s.Count, "oldest_age_ms": s.OldestAge.Milliseconds(), "stuck_after_ms": r.o.StuckAfter.Milliseconds(), "gids": stuck})
	}
}

func (r *Resource) upkeepLoop() {
	defer r.stopped.Done()
	// Close cancels a round in progress.
	stopped, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	t := time.NewTicker(r.o.UpkeepEvery)
	defer t.Stop()
	for {
		r.upkeep(stopped)
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

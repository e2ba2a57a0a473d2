//go:build pgtest

// Tests on a real PostgreSQL, built only with -tags pgtest and given the
// database in VERDICT_TEST_PG_URL (a lib/pq URL with max_prepared_transactions
// > 0): test/pg/go-pgtest.test.ts starts the server and runs them.
package postgres

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) log(event string, fields map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf("%s %v", event, fields))
}

func (e *events) has(prefix string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func open(t *testing.T, participantID string, o Options) *Resource {
	t.Helper()
	dsn := os.Getenv("VERDICT_TEST_PG_URL")
	if dsn == "" {
		t.Fatal("VERDICT_TEST_PG_URL is not set")
	}
	r, err := Open(context.Background(), dsn, "upkeep", participantID, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func within(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Work begun and never prepared is rolled back after OpenTxnTimeout; later work and an empty PREPARE for it are refused.
func TestOpenWorkIsRolledBackAfterItsTimeoutAndNotTakenUpAgain(t *testing.T) {
	ev := &events{}
	r := open(t, "work", Options{OpenTxnTimeout: 300 * time.Millisecond, Log: ev.log})
	if _, err := r.DB.Exec("CREATE TABLE IF NOT EXISTS upkeep_kv (k text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	tx, err := r.Work(context.Background(), "t-idle")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO upkeep_kv VALUES ('idle')"); err != nil {
		t.Fatal(err)
	}
	within(t, "the open transaction expired", 10*time.Second, func() bool { return ev.has("open-txn-expired") })
	if _, err := r.Work(context.Background(), "t-idle"); err == nil || !strings.Contains(err.Error(), "was rolled back") {
		t.Fatalf("work after the expiry: %v", err)
	}
	if reason, err := r.Prepare("t-idle", nil, 0); err != nil || !strings.Contains(reason, "no open PostgreSQL transaction") {
		t.Fatalf("PREPARE after the expiry: %q %v, want a NO", reason, err)
	}
	var n int
	_ = r.DB.QueryRow("SELECT count(*) FROM upkeep_kv WHERE k = 'idle'").Scan(&n)
	if n != 0 {
		t.Fatal("the expired work was kept")
	}
	// Work prepared in time is not touched by its timer.
	tx, _ = r.Work(context.Background(), "t-quick")
	if _, err := tx.Exec("INSERT INTO upkeep_kv VALUES ('quick') ON CONFLICT DO NOTHING"); err != nil {
		t.Fatal(err)
	}
	if reason, err := r.Prepare("t-quick", nil, 0); reason != "" || err != nil {
		t.Fatalf("PREPARE: %q %v", reason, err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := r.Commit("t-quick"); err != nil {
		t.Fatal(err)
	}
	_ = r.DB.QueryRow("SELECT count(*) FROM upkeep_kv WHERE k = 'quick'").Scan(&n)
	if n != 1 {
		t.Fatal("the prepared work was lost")
	}
}

// The upkeep deletes markers past their retention (only this participant's) and alerts on prepared transactions past StuckAfter.
func TestUpkeepDeletesOldMarkersAndAlertsOnStuckPreparedTransactions(t *testing.T) {
	ev := &events{}
	r := open(t, "keep", Options{MarkerRetention: time.Hour, StuckAfter: 200 * time.Millisecond, UpkeepEvery: 100 * time.Millisecond, Log: ev.log})
	other := open(t, "other", Options{Log: func(string, map[string]any) {}})
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO verdict_markers (gid, txn_id, prepared_at) VALUES ('%s', 'old', now() - interval '2 hours') ON CONFLICT DO NOTHING", r.GID("old")),
		fmt.Sprintf("INSERT INTO verdict_markers (gid, txn_id, prepared_at) VALUES ('%s', 'new', now()) ON CONFLICT DO NOTHING", r.GID("new")),
		fmt.Sprintf("INSERT INTO verdict_markers (gid, txn_id, prepared_at) VALUES ('%s', 'old', now() - interval '2 hours') ON CONFLICT DO NOTHING", other.GID("old")),
	} {
		if _, err := r.DB.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(gid string) bool { ok, _ := r.marker(gid); return ok }
	within(t, "the old marker deleted", 10*time.Second, func() bool { return !marker(r.GID("old")) })
	if !marker(r.GID("new")) || !marker(other.GID("old")) {
		t.Fatal("the clean-up deleted a marker it should have kept")
	}
	if reason, err := r.Prepare("t-stuck", []byte(`{"sql": ["SELECT 1"]}`), 0); reason != "" || err != nil {
		t.Fatalf("PREPARE: %q %v", reason, err)
	}
	defer r.Rollback("t-stuck")
	within(t, "the stuck alert", 10*time.Second, func() bool { return ev.has("prepared-stuck") })
	if s := r.PreparedStats(); s.Count != 1 || s.Stuck != 1 || s.OldestAge < 200*time.Millisecond {
		t.Fatalf("stats %+v", s)
	}
	if err := r.Rollback("t-stuck"); err != nil {
		t.Fatal(err)
	}
}

// Participants starting at the same moment on one database all start: the loser of the race to create the tables is not refused.
func TestParticipantsStartingTogetherAllCreateTheirTables(t *testing.T) {
	dsn := os.Getenv("VERDICT_TEST_PG_URL")
	for round := 0; round < 5; round++ {
		table := fmt.Sprintf("race_markers_%d_%d", time.Now().UnixNano()%1_000_000, round)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r, err := Open(context.Background(), dsn, "race", fmt.Sprintf("p%d", i), Options{MarkerTable: table, Log: func(string, map[string]any) {}})
				if err != nil {
					errs <- err
					return
				}
				r.Close()
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

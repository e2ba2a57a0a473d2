//go:build pgtest

// Tests on a real PostgreSQL, built only with -tags pgtest and given the
// database in VERDICT_TEST_PG_URL: test/pg/go-pgtest.test.ts runs them.
package saga

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func openPgInbox(t *testing.T) *PgInbox {
	t.Helper()
	db, err := sql.Open("postgres", os.Getenv("VERDICT_TEST_PG_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	in, err := OpenPgInbox(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS pg_inbox_effects (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return in
}

func effects(t *testing.T, in *PgInbox, key string) int {
	t.Helper()
	var n int
	if err := in.DB.QueryRow("SELECT count(*) FROM pg_inbox_effects WHERE key = $1", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func writing(runs *int, answer Result) PgHandler {
	return func(ctx context.Context, tx *sql.Tx, r Request) (Result, error) {
		*runs++
		_, err := tx.ExecContext(ctx, "INSERT INTO pg_inbox_effects (key) VALUES ($1)", r.Key)
		return answer, err
	}
}

// The file inbox's rules, in PostgreSQL: a repeat answered from its row, FAILED rolled back, empty compensations, late actions refused, ends.
func TestThePgInboxKeepsTheInboxRules(t *testing.T) {
	in := openPgInbox(t)
	ctx := context.Background()
	saga := fmt.Sprintf("pg-rules-%d", time.Now().UnixNano())
	runs := 0
	for i := 0; i < 2; i++ {
		a, err := in.Handle(ctx, call(saga, 0, Action), writing(&runs, Done("held", "")))
		if err != nil || !a.Done || a.Output != "held" {
			t.Fatalf("call %d: %+v %v", i, a, err)
		}
	}
	if runs != 1 || effects(t, in, saga+"/0/action") != 1 {
		t.Fatalf("runs %d, effects %d: want one", runs, effects(t, in, saga+"/0/action"))
	}
	if a, _ := in.Handle(ctx, call(saga, 1, Action), writing(&runs, Failed("declined"))); a.Done || a.Reason != "declined" || effects(t, in, saga+"/1/action") != 0 {
		t.Fatalf("a FAILED action: %+v, its write kept: %d", a, effects(t, in, saga+"/1/action"))
	}
	if a, _ := in.Handle(ctx, call(saga, 1, Compensate), writing(&runs, Done("", ""))); !a.Done || !strings.Contains(a.Reason, "FAILED") {
		t.Fatalf("compensation of a failed action: %+v", a)
	}
	if a, _ := in.Handle(ctx, call(saga, 2, Compensate), writing(&runs, Done("", ""))); !a.Done || !strings.Contains(a.Reason, "never ran here") {
		t.Fatalf("compensation first: %+v", a)
	}
	if a, _ := in.Handle(ctx, call(saga, 2, Action), writing(&runs, Done("", ""))); a.Done || !strings.Contains(a.Reason, "refused") {
		t.Fatalf("an action after its compensation: %+v", a)
	}
	if runs != 2 {
		t.Fatalf("runs %d", runs)
	}
	boom := func(context.Context, *sql.Tx, Request) (Result, error) { return Result{}, errors.New("database busy") }
	if _, err := in.Handle(ctx, call(saga, 3, Action), boom); err == nil {
		t.Fatal("a handler's error must be the call's error")
	}
	if err := in.End(ctx, saga); err != nil {
		t.Fatal(err)
	}
	if err := in.End(ctx, saga); err != nil {
		t.Fatal("a repeated End:", err)
	}
	if _, err := in.Handle(ctx, call(saga, 0, Action), writing(&runs, Done("", ""))); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("a call of an ended saga: %v", err)
	}
	var rows int
	_ = in.DB.QueryRow("SELECT count(*) FROM verdict_saga_inbox WHERE saga_id = $1", saga).Scan(&rows)
	if rows != 0 {
		t.Fatalf("%d rows left after the end", rows)
	}
}

// An action and its compensation arriving together are ordered by the step's lock: exactly one of them runs its handler.
func TestAnActionAndItsCompensationTogetherAreOrdered(t *testing.T) {
	in := openPgInbox(t)
	for round := 0; round < 10; round++ {
		saga := fmt.Sprintf("pg-race-%d-%d", time.Now().UnixNano(), round)
		var mu sync.Mutex
		runs := map[string]int{}
		h := func(ctx context.Context, tx *sql.Tx, r Request) (Result, error) {
			mu.Lock()
			runs[r.Kind]++
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			return Done("", ""), nil
		}
		var wg sync.WaitGroup
		answers := make([]Answer, 2)
		for i, kind := range []string{Action, Compensate} {
			wg.Add(1)
			go func(i int, kind string) {
				defer wg.Done()
				a, err := in.Handle(context.Background(), call(saga, 0, kind), h)
				if err != nil {
					t.Error(err)
				}
				answers[i] = a
			}(i, kind)
		}
		wg.Wait()
		// Either the action ran and its compensation undid it (both ran), or the compensation came first: empty, and the action refused.
		ranBoth := runs[Action] == 1 && runs[Compensate] == 1 && answers[0].Done && answers[1].Done
		compensatedFirst := runs[Action] == 0 && runs[Compensate] == 0 && !answers[0].Done && answers[1].Done
		if !ranBoth && !compensatedFirst {
			t.Fatalf("round %d: runs %v, answers %+v", round, runs, answers)
		}
	}
}

//go:build pgtest

// Tests on a real PostgreSQL, built only with -tags pgtest and given the
// database in VERDICT_TEST_PG_URL: test/pg/go-pgtest.test.ts runs them.
package tcc

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"
)

// holdFor reserves nothing in the database; its Try gives the TTL the payload names ("" for none).
type holdFor struct{}

func (holdFor) Try(_ context.Context, _ *sql.Tx, b Branch) (TryResult, error) {
	if len(b.Payload) == 0 {
		return TryResult{}, nil
	}
	d, err := time.ParseDuration(string(b.Payload))
	return TryResult{TTL: d}, err
}
func (holdFor) Confirm(context.Context, *sql.Tx, Branch) error { return nil }
func (holdFor) Cancel(context.Context, *sql.Tx, Branch) error  { return nil }

// What a YES says is left of a reserve's TTL (Vote.reserve_ttl_ms) is read from its barrier row: none without a TTL,
// none once settled.
func TestReserveTTLIsReadFromTheBarrierRow(t *testing.T) {
	id := fmt.Sprintf("ttl-%d", time.Now().UnixNano()%1_000_000_000)
	r, err := Open(context.Background(), os.Getenv("VERDICT_TEST_PG_URL"), id, holdFor{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for txn, ttl := range map[string]string{"t1": "45s", "t2": ""} {
		if reason, err := r.Prepare(txn, []byte(ttl), 0); reason != "" || err != nil {
			t.Fatalf("Try %s: %q %v", txn, reason, err)
		}
	}
	left, ok, err := r.ReserveTTL("t1")
	if err != nil || !ok || left > 45*time.Second || left < 30*time.Second {
		t.Errorf("t1: %v %v %v, want about 45 s", left, ok, err)
	}
	for _, txn := range []string{"t2", "never"} {
		if _, ok, err := r.ReserveTTL(txn); ok || err != nil {
			t.Errorf("%s: %v %v, want none", txn, ok, err)
		}
	}
	if err := r.Commit("t1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.ReserveTTL("t1"); ok || err != nil {
		t.Errorf("t1 confirmed: %v %v, want none", ok, err)
	}
}

package participant

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	ppb "verdict/sdk/go/pb/participantpb"
)

func newTestEngine(t *testing.T, dir string) (*Engine, *MemoryResource) {
	t.Helper()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	m := NewMemoryResource()
	e, err := NewEngine("c1", "p1", j, m, func(string, map[string]any) {})
	if err != nil {
		t.Fatal(err)
	}
	return e, m
}

func refusalCode(err error) codes.Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return codes.OK
}

func TestEngineFollowsTheParticipantRules(t *testing.T) {
	dir := t.TempDir()
	e, m := newTestEngine(t, dir)
	set := []byte(`{"set":{"k":"v"}}`)

	// PREPARE -> YES, durably; again -> YES (R7).
	for i := 0; i < 2; i++ {
		if yes, reason, err := e.Prepare("c1", "t1", "p1", set, 0); !yes || reason != "" || err != nil {
			t.Fatalf("prepare %d: %v %q %v", i, yes, reason, err)
		}
	}
	if en, _ := e.Journal.Get("t1"); en.State != Prepared {
		t.Fatalf("journal %v before the YES", en)
	}
	if st, _ := e.Status("c1", "t1", "p1"); st != ppb.TxnStatusValue_TXN_STATUS_PREPARED {
		t.Fatalf("status %v", st)
	}
	// COMMIT applies; a redelivery is ACKed and applies nothing; ABORT after it is refused.
	if err := e.Decide("c1", "t1", "p1", true, "decision"); err != nil {
		t.Fatal(err)
	}
	if err := e.Decide("c1", "t1", "p1", true, "decision"); err != nil {
		t.Fatal("a redelivered COMMIT is ACKed:", err)
	}
	if refusalCode(e.Decide("c1", "t1", "p1", false, "decision")) != codes.FailedPrecondition {
		t.Fatal("a decided outcome never changes")
	}
	if m.Values()["k"] != "v" {
		t.Fatalf("values %v", m.Values())
	}

	// ABORT before PREPARE: ACK, remembered, and the late PREPARE gets NO.
	if err := e.Decide("c1", "t2", "p1", false, "decision"); err != nil {
		t.Fatal(err)
	}
	if yes, _, _ := e.Prepare("c1", "t2", "p1", set, 0); yes {
		t.Fatal("a PREPARE after its ABORT votes NO")
	}
	// COMMIT of a transaction never prepared: refused.
	if refusalCode(e.Decide("c1", "t3", "p1", true, "decision")) != codes.FailedPrecondition {
		t.Fatal("COMMIT never prepared is refused")
	}
	// Status of an unknown transaction: REFUSED, durably, and a later PREPARE gets NO.
	if st, _ := e.Status("c1", "t4", "p1"); st != ppb.TxnStatusValue_TXN_STATUS_REFUSED {
		t.Fatalf("status %v", st)
	}
	if yes, _, _ := e.Prepare("c1", "t4", "p1", set, 0); yes {
		t.Fatal("a PREPARE after a REFUSED status votes NO")
	}
	// A payload the resource refuses: NO with its reason, remembered.
	if yes, reason, _ := e.Prepare("c1", "t5", "p1", []byte("not json"), 0); yes || reason == "" {
		t.Fatal("a bad payload votes NO with a reason")
	}
	if st, _ := e.Status("c1", "t5", "p1"); st != ppb.TxnStatusValue_TXN_STATUS_REFUSED {
		t.Fatalf("status %v", st)
	}
	// Not this participant, not this cluster, not an id.
	if refusalCode(prepErr(e.Prepare("c2", "t6", "p1", set, 0))) != codes.FailedPrecondition ||
		refusalCode(prepErr(e.Prepare("c1", "t6", "p2", set, 0))) != codes.FailedPrecondition ||
		refusalCode(prepErr(e.Prepare("c1", "bad id", "p1", set, 0))) != codes.InvalidArgument {
		t.Fatal("requests for another cluster or participant, or with a bad id, are refused")
	}

	// Prepared and not decided, then a restart: in doubt at once, with its held writes.
	if yes, _, _ := e.Prepare("c1", "t7", "p1", []byte(`{"set":{"q":1}}`), 0); !yes {
		t.Fatal("t7 prepares")
	}
	e.Journal.Close()
	e2, m2 := newTestEngine(t, dir)
	if got := e2.InDoubt(); len(got) != 1 || got[0] != "t7" {
		t.Fatalf("in doubt after restart: %v", got)
	}
	if d := e2.due(e2.doubts["t7"].nextAskAt); len(d) != 1 {
		t.Fatal("a prepared transaction is asked about at once after a restart")
	}
	if m2.Values()["k"] != "v" {
		t.Fatal("committed values come back from the journal")
	}
	if err := e2.Decide("c1", "t7", "p1", true, "in-doubt"); err != nil || m2.Values()["q"] != float64(1) {
		t.Fatalf("the in-doubt COMMIT applies the held writes: %v %v", err, m2.Values())
	}
}

func prepErr(_ bool, _ string, err error) error { return err }

// No YES without the journal's record (R4): a journal that cannot write makes the PREPARE fail and releases the resource.
func TestNoYesWithoutTheJournal(t *testing.T) {
	e, m := newTestEngine(t, t.TempDir())
	e.Journal.Close()
	yes, _, err := e.Prepare("c1", "t1", "p1", []byte(`{"set":{"k":"v"}}`), 0)
	if yes || err == nil {
		t.Fatalf("YES without a journal: %v %v", yes, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.held) != 0 {
		t.Fatal("the resource still holds the work")
	}
}

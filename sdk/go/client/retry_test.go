package client

import (
	"context"
	"testing"
)

// The same table as the TypeScript and Python SDKs' retry tests: one rule in three languages.
func TestClassifyFailure(t *testing.T) {
	cases := []struct {
		code, reason   string
		neverConnected bool
		want           Failure
	}{
		{"UNAVAILABLE", "NOT_LEADER", false, NotActedOn},
		{"UNAVAILABLE", "NO_LEADER", false, NotActedOn},
		{"UNAVAILABLE", "", true, NotActedOn},
		{"UNAVAILABLE", "", false, MaybeActedOn},
		{"UNAVAILABLE", "UNKNOWN_OUTCOME", true, MaybeActedOn},
		{"DEADLINE_EXCEEDED", "", false, MaybeActedOn},
		{"INVALID_ARGUMENT", "", false, Refused},
		{"FAILED_PRECONDITION", "", false, Refused},
		{"UNIMPLEMENTED", "", false, Refused},
		{"INTERNAL", "", false, Failed},
		{"CANCELLED", "", false, Failed},
		{"UNKNOWN", "", false, Failed},
	}
	for _, c := range cases {
		if got := ClassifyFailure(c.code, c.reason, c.neverConnected); got != c.want {
			t.Errorf("ClassifyFailure(%s, %q, %v) = %s, want %s", c.code, c.reason, c.neverConnected, got, c.want)
		}
	}
	if !Retryable(NotActedOn) || !Retryable(MaybeActedOn) || Retryable(Refused) || Retryable(Failed) {
		t.Error("only not-acted-on and maybe-acted-on are retried")
	}
}

func TestBeginRule(t *testing.T) {
	r := NewBeginRule(false)
	r.Attempted(NotActedOn)
	r.Attempted(Refused)
	if !r.Begins() {
		t.Fatal("begin rides along while every attempt certainly did nothing")
	}
	r.Attempted(MaybeActedOn)
	if r.Begins() {
		t.Fatal("after an attempt that may have reached a leader, never again (R2)")
	}
	r.Attempted(NotActedOn)
	if r.Begins() {
		t.Fatal("never again, even after a later attempt that did nothing")
	}
	if NewBeginRule(true).Begins() {
		t.Fatal("a transaction begun with Begin never carries begin")
	}
	a := NewBeginRule(false)
	a.Attempted(Answered)
	if a.Begins() {
		t.Fatal("an answered attempt ends begin")
	}
}

func TestPauseMs(t *testing.T) {
	if got := PauseMs(0, DefaultBackoff, 0); got != 25 {
		t.Errorf("round 0, random 0: %v, want 25 (half of 50)", got)
	}
	if got := PauseMs(0, DefaultBackoff, 0.999999); got < 49.9 || got >= 50 {
		t.Errorf("round 0, random ~1: %v, want just under 50", got)
	}
	if got := PauseMs(20, DefaultBackoff, 0); got != 500 {
		t.Errorf("capped: %v, want 500 (half of 1000)", got)
	}
}

func TestIds(t *testing.T) {
	for _, ok := range []string{"a", "T-1:x.y_z", "0" + string(make([]byte, 0))} {
		if CheckTxnID(ok) != nil {
			t.Errorf("%q is a transaction id", ok)
		}
	}
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", "-a", "a b", string(long), "a/b"} {
		if CheckTxnID(bad) == nil {
			t.Errorf("%q is not a transaction id", bad)
		}
	}
	if CheckParticipantID("p:1") == nil || CheckParticipantID("p-1.x") != nil {
		t.Error("participant ids are 1-64 of [A-Za-z0-9_.-]")
	}
	id := NewTxnIDAt(0x0123456789ab, [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if id != "01234567-89ab-7fff-bfff-ffffffffffff" {
		t.Errorf("UUIDv7 layout: %s", id)
	}
	if CheckTxnID(NewTxnID()) != nil {
		t.Error("a new id is a transaction id")
	}
}

func TestConnectionRefusesBadInput(t *testing.T) {
	if _, err := New(nil, Options{Insecure: true}); err == nil {
		t.Error("no addresses")
	}
	if _, err := New([]string{"nohost"}, Options{Insecure: true}); err == nil {
		t.Error("not host:port")
	}
	if _, err := New([]string{"127.0.0.1:1"}, Options{}); err == nil {
		t.Error("plaintext without Insecure")
	}
	c, err := New([]string{"127.0.0.1:1"}, Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tx, _ := c.Transaction(TxnOptions{TxnID: "t1"})
	if tx.Enlist("bad id", nil) == nil || tx.Enlist("p", nil) != nil || tx.Enlist("p", nil) == nil {
		t.Error("enlist checks the id and refuses a second enlistment of the same participant")
	}
	if _, err := c.Transaction(TxnOptions{TxnID: "bad id"}); err == nil {
		t.Error("a bad transaction id")
	}
	r, err := tx.Abort(context.Background(), "")
	if err != nil || r.Outcome != Aborted {
		t.Errorf("a transaction never sent aborts locally: %v %v", r, err)
	}
}

package tcc

import (
	"testing"
	"time"
)

// The rule's table (docs/tcc.md): every record against every message.
func TestBarrierRule(t *testing.T) {
	cases := []struct{ state, op, kind, next string }{
		{"", OpTry, Run, Tried},
		{"", OpConfirm, Refuse, ""},
		{"", OpCancel, Record, EmptyCancelled},
		{Tried, OpTry, Done, ""},
		{Tried, OpConfirm, Run, Confirmed},
		{Tried, OpCancel, Run, Cancelled},
		{Confirmed, OpTry, Done, ""},
		{Confirmed, OpConfirm, Done, ""},
		{Confirmed, OpCancel, Refuse, ""},
		{Cancelled, OpTry, Refuse, ""},
		{Cancelled, OpConfirm, Refuse, ""},
		{Cancelled, OpCancel, Done, ""},
		{EmptyCancelled, OpTry, Refuse, ""},
		{EmptyCancelled, OpConfirm, Refuse, ""},
		{EmptyCancelled, OpCancel, Done, ""},
	}
	for _, c := range cases {
		v := Step("t1", c.state, c.op)
		if v.Kind != c.kind || v.Next != c.next {
			t.Errorf("%q + %s = %+v, want %s %s", c.state, c.op, v, c.kind, c.next)
		}
		if v.Kind == Refuse && v.Reason == "" {
			t.Errorf("%q + %s refuses without a reason", c.state, c.op)
		}
		if v.Hanging != (c.op == OpTry && v.Kind == Refuse) {
			t.Errorf("%q + %s: only a Try after its Cancel is a hanging Try", c.state, c.op)
		}
	}
}

// Every order of up to four messages, duplicates included: a Cancel
// recorded before a Try keeps it from ever reserving, nothing is both
// confirmed and cancelled, and each handler runs at most once.
func TestBarrierEveryOrder(t *testing.T) {
	ops := []string{OpTry, OpConfirm, OpCancel}
	var walk func(seq []string)
	walk = func(seq []string) {
		state := ""
		runs := map[string]int{}
		for _, op := range seq {
			v := Step("t1", state, op)
			if v.Kind == Run {
				runs[op]++
			}
			if v.Kind == Run || v.Kind == Record {
				state = v.Next
			}
		}
		for op, n := range runs {
			if n > 1 {
				t.Errorf("%v ran %s %d times", seq, op, n)
			}
		}
		if runs[OpConfirm] > 0 && runs[OpCancel] > 0 {
			t.Errorf("%v both confirmed and cancelled", seq)
		}
		if (runs[OpConfirm] > 0 || runs[OpCancel] > 0) && runs[OpTry] == 0 {
			t.Errorf("%v settled a reserve never tried", seq)
		}
		if len(seq) < 4 {
			for _, op := range ops {
				walk(append(append([]string(nil), seq...), op))
			}
		}
	}
	walk(nil)
}

func TestTTL(t *testing.T) {
	if TTLProblem(0) != "" || TTLProblem(30*time.Second) != "" {
		t.Error("no TTL, and a whole number of milliseconds, are taken")
	}
	for _, bad := range []time.Duration{-time.Second, time.Microsecond, TTLMax + time.Millisecond} {
		if TTLProblem(bad) == "" {
			t.Errorf("a TTL of %v is refused", bad)
		}
	}
}

package saga

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func call(saga string, step uint32, kind string) Request {
	return Request{SagaID: saga, Step: step, Kind: kind, Key: StepKey(saga, step, kind), Name: "reserve"}
}

// counting is a handler that counts its runs and answers done with an effect.
func counting(runs *int, effect string) Handler {
	return func(r Request) (Result, error) {
		*runs++
		return Done("out-"+r.Key, effect), nil
	}
}

func openInbox(t *testing.T, dir string, applied *[]string) *Inbox {
	t.Helper()
	in, err := OpenInbox(dir, func(r Record) { *applied = append(*applied, r.Key+" "+r.Effect) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

func TestARepeatedCallIsAnsweredFromItsRecordAndItsEffectAppliedOnce(t *testing.T) {
	var applied []string
	in := openInbox(t, t.TempDir(), &applied)
	runs := 0
	for i := 0; i < 3; i++ {
		a, err := in.Handle(call("s1", 0, Action), counting(&runs, "reserve"))
		if err != nil || !a.Done || a.Output != "out-s1/0/action" {
			t.Fatalf("call %d: %+v %v", i, a, err)
		}
	}
	if runs != 1 || len(applied) != 1 || applied[0] != "s1/0/action reserve" {
		t.Fatalf("runs %d, applied %v: want one run, one effect", runs, applied)
	}
}

func TestACompensationWithoutItsActionIsEmptyAndALateActionIsRefused(t *testing.T) {
	var applied []string
	in := openInbox(t, t.TempDir(), &applied)
	runs := 0
	a, err := in.Handle(call("s1", 0, Compensate), counting(&runs, "release"))
	if err != nil || !a.Done || !strings.Contains(a.Reason, "never ran here") {
		t.Fatalf("compensation first: %+v %v", a, err)
	}
	a, err = in.Handle(call("s1", 0, Action), counting(&runs, "reserve"))
	if err != nil || a.Done || !strings.Contains(a.Reason, "refused") {
		t.Fatalf("action after its compensation: %+v %v, want FAILED", a, err)
	}
	if runs != 0 || len(applied) != 0 {
		t.Fatalf("runs %d, applied %v: nothing may run", runs, applied)
	}
	// A FAILED action leaves nothing to compensate.
	failed := func(Request) (Result, error) { return Failed("declined"), nil }
	if a, _ := in.Handle(call("s1", 1, Action), failed); a.Done || a.Reason != "declined" {
		t.Fatalf("failed action: %+v", a)
	}
	if a, _ := in.Handle(call("s1", 1, Compensate), counting(&runs, "release")); !a.Done || runs != 0 || !strings.Contains(a.Reason, "FAILED") {
		t.Fatalf("compensation of a failed action: %+v, runs %d", a, runs)
	}
}

func TestATransientErrorRecordsNothingAndACompensationCannotFail(t *testing.T) {
	var applied []string
	dir := t.TempDir()
	in := openInbox(t, dir, &applied)
	boom := func(Request) (Result, error) { return Result{}, errors.New("database down") }
	if _, err := in.Handle(call("s1", 0, Action), boom); err == nil {
		t.Fatal("a handler's error must be the call's error")
	}
	if _, ok := in.Get("s1/0/action"); ok {
		t.Fatal("a transient error was recorded")
	}
	runs := 0
	if _, err := in.Handle(call("s1", 0, Action), counting(&runs, "reserve")); err != nil || runs != 1 {
		t.Fatalf("the retry: %v, runs %d", err, runs)
	}
	failed := func(Request) (Result, error) { return Failed("no"), nil }
	if _, err := in.Handle(call("s1", 0, Compensate), failed); err == nil {
		t.Fatal("a compensation that answers FAILED must be retried, not recorded")
	}
}

func TestAnEndDropsTheKeysAndRefusesLaterCalls(t *testing.T) {
	var applied []string
	in := openInbox(t, t.TempDir(), &applied)
	runs := 0
	_, _ = in.Handle(call("s1", 0, Action), counting(&runs, "reserve"))
	if err := in.End("s1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := in.Get("s1/0/action"); ok {
		t.Fatal("the ended saga's key stayed")
	}
	if _, err := in.Handle(call("s1", 0, Action), counting(&runs, "reserve")); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("a call of an ended saga: %v", err)
	}
	if runs != 1 {
		t.Fatalf("runs %d", runs)
	}
}

func TestEndManyDropsEverySagasKeysInOneWriteAndSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	var applied []string
	in := openInbox(t, dir, &applied)
	runs := 0
	for _, id := range []string{"s1", "s2", "s3"} {
		_, _ = in.Handle(call(id, 0, Action), counting(&runs, "reserve"))
	}
	if err := in.EndMany([]string{"s1", "s2", "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := in.EndMany([]string{"s1"}); err != nil {
		t.Fatal(err)
	}
	in.Close()
	again := openInbox(t, dir, &applied)
	for id, ended := range map[string]bool{"s1": true, "s2": true, "s3": false} {
		if again.Ended(id) != ended {
			t.Fatalf("saga %s ended=%v after a restart, want %v", id, again.Ended(id), ended)
		}
		if _, ok := again.Get(id + "/0/action"); ok == ended {
			t.Fatalf("saga %s: key kept=%v", id, ok)
		}
	}
}

func TestTheInboxSurvivesARestartAndReplaysItsEffectsInOrder(t *testing.T) {
	dir := t.TempDir()
	var applied []string
	in, err := OpenInbox(dir, func(r Record) { applied = append(applied, r.Key) })
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, _ = in.Handle(call("s1", 0, Action), counting(&runs, "a"))
	_, _ = in.Handle(call("s1", 1, Action), counting(&runs, "b"))
	_, _ = in.Handle(call("s2", 0, Action), counting(&runs, "c"))
	_ = in.End("s2")
	in.Close()
	// A torn last line (no newline: its fsync never returned) is dropped.
	f, _ := os.OpenFile(filepath.Join(dir, InboxFile), os.O_WRONLY|os.O_APPEND, 0o600)
	_, _ = f.WriteString(`1234abcd {"t":"step","saga_id":"s1","st`)
	f.Close()

	var again []string
	in2 := openInbox(t, dir, &again)
	want := []string{"s1/0/action a", "s1/1/action b", "s2/0/action c"}
	if strings.Join(again, ",") != strings.Join(want, ",") {
		t.Fatalf("replayed %v, want %v", again, want)
	}
	if a, err := in2.Handle(call("s1", 0, Action), counting(&runs, "a")); err != nil || !a.Done || runs != 3 {
		t.Fatalf("a repeat after the restart: %+v %v, runs %d", a, err, runs)
	}
	if !in2.Ended("s2") {
		t.Fatal("the end of s2 was lost")
	}
	// The next record starts on a line of its own, after the torn piece was cut off.
	if _, err := in2.Handle(call("s3", 0, Action), counting(&runs, "d")); err != nil {
		t.Fatal(err)
	}
	in2.Close()
	var third []string
	openInbox(t, dir, &third)
	if len(third) != 4 {
		t.Fatalf("after the second restart: %v", third)
	}
}

func TestADamagedLineBeforeTheLastStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	var applied []string
	in := openInbox(t, dir, &applied)
	runs := 0
	_, _ = in.Handle(call("s1", 0, Action), counting(&runs, "a"))
	_, _ = in.Handle(call("s1", 1, Action), counting(&runs, "b"))
	in.Close()
	path := filepath.Join(dir, InboxFile)
	b, _ := os.ReadFile(path)
	b[12] ^= 0x20
	_ = os.WriteFile(path, b, 0o600)
	_, err := OpenInbox(dir, nil)
	var corrupt *InboxCorrupt
	if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("open: %v, want InboxCorrupt at line 1", err)
	}
}

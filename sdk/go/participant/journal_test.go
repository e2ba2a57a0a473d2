package participant

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestJournalKeepsWhatItRecordedAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ txn, state string }{{"t1", Prepared}, {"t2", Refused}, {"t1", Committed}, {"t3", Aborted}} {
		if _, err := j.Record(r.txn, r.state, []byte(r.txn)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	if _, err := j.Record("t4", Prepared, nil); err == nil {
		t.Fatal("a closed journal records nothing")
	}
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var got []string
	for _, e := range j.Entries() {
		got = append(got, e.TxnID+"="+e.State+"/"+string(e.Payload))
	}
	// One entry per transaction, in the order of its last change.
	if want := []string{"t2=refused/t2", "t1=committed/t1", "t3=aborted/t3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
}

// The Python SDK's journal line for the same record, byte for byte (sdk/python/verdict/journal.py).
func TestJournalLinesAreThePythonSDKs(t *testing.T) {
	line := string(encode(Entry{TxnID: "t1", State: Prepared, Payload: []byte(`{"set":{"k":1}}`)}))
	if want := `b96ef586 {"t":"t1","s":"prepared","p":"eyJzZXQiOnsiayI6MX19"}` + "\n"; line != want {
		t.Fatalf("line %q, want %q", line, want)
	}
}

func TestJournalDropsATornLastWriteAndRefusesCorruption(t *testing.T) {
	good := string(encode(Entry{TxnID: "t1", State: Prepared}))
	bad := `00000000 {"t":"t2","s":"prepared","p":""}` + "\n"
	for _, c := range []struct {
		name, content string
		corrupt       bool
		want          int
	}{
		{"a torn last line without its newline", good + `1234abcd {"t":"t2"`, false, 1},
		{"a complete but bad last line", good + bad, false, 1},
		{"a bad line before a good one", bad + good, true, 0},
		{"an unknown state", good + string(encode(Entry{TxnID: "t3", State: "maybe"})) + good, true, 0},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "journal.log"), []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := OpenJournal(dir)
		var jc *JournalCorrupt
		if c.corrupt {
			if !errors.As(err, &jc) {
				t.Errorf("%s: %v, want JournalCorrupt", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := len(j.Entries()); n != c.want {
			t.Errorf("%s: %d entries, want %d", c.name, n, c.want)
		}
		j.Close()
		// Rewritten on open: the torn piece is gone from the file.
		data, _ := os.ReadFile(filepath.Join(dir, "journal.log"))
		if string(data) != good {
			t.Errorf("%s: rewritten as %q", c.name, data)
		}
	}
}

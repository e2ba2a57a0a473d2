package participant

// The participant's durable journal: what it prepared and decided, so a YES
// vote survives kill -9 (R4). The same file format as the Python SDK's
// (sdk/python/verdict/journal.py): one line per record,
// "<crc32 hex> <json>\n", each the latest state of one transaction. A record
// is written, then the file is fsync'd, before Record returns: the
// participant votes YES only after that. On open a torn last line (a crash
// before its fsync, so before any vote it allowed) is dropped; a bad line
// anywhere else is corruption and Open refuses. The file is then rewritten
// with one line per transaction (temporary file, fsync, rename, directory
// fsync), so it does not grow across restarts.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
)

// Journal states.
const (
	Prepared  = "prepared"
	Committed = "committed"
	Aborted   = "aborted"
	Refused   = "refused"
)

// lineBytesMax: a journal line longer than this is not one this code wrote.
const lineBytesMax = 16 * 1024 * 1024

// Entry is one transaction's latest state.
type Entry struct {
	TxnID string
	State string
	// Payload is the PREPARE's payload, kept while prepared and after commit (a memory resource replays it).
	Payload []byte
}

type wireEntry struct {
	T string `json:"t"`
	S string `json:"s"`
	P []byte `json:"p"`
}

func encode(e Entry) []byte {
	p := e.Payload
	if p == nil {
		p = []byte{}
	}
	body, _ := json.Marshal(wireEntry{T: e.TxnID, S: e.State, P: p})
	return append([]byte(fmt.Sprintf("%08x ", crc32.ChecksumIEEE(body))), append(body, '\n')...)
}

func decode(line []byte) (Entry, bool) {
	if len(line) < 10 || line[8] != ' ' {
		return Entry{}, false
	}
	body := line[9:]
	var sum uint32
	if _, err := fmt.Sscanf(string(line[:8]), "%08x", &sum); err != nil || sum != crc32.ChecksumIEEE(body) {
		return Entry{}, false
	}
	var w wireEntry
	if err := json.Unmarshal(body, &w); err != nil || w.T == "" {
		return Entry{}, false
	}
	switch w.S {
	case Prepared, Committed, Aborted, Refused:
	default:
		return Entry{}, false
	}
	return Entry{TxnID: w.T, State: w.S, Payload: w.P}, true
}

// JournalCorrupt is a journal line that is neither valid nor a torn last write: an operator must look.
type JournalCorrupt struct{ Reason string }

func (e *JournalCorrupt) Error() string { return e.Reason }

// Journal is the journal in one directory; safe for concurrent use.
type Journal struct {
	Path    string
	dir     string
	mu      sync.Mutex
	f       *os.File
	entries map[string]Entry
	// order is the order of last change (a memory resource replays commits in it).
	order []string
}

// OpenJournal opens (or creates) the journal in dir.
func OpenJournal(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	j := &Journal{Path: filepath.Join(dir, "journal.log"), dir: dir, entries: map[string]Entry{}}
	if err := j.read(); err != nil {
		return nil, err
	}
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(j.Path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	j.f = f
	return j, nil
}

func (j *Journal) put(e Entry) {
	if _, ok := j.entries[e.TxnID]; ok {
		for i, t := range j.order {
			if t == e.TxnID {
				j.order = append(j.order[:i], j.order[i+1:]...)
				break
			}
		}
	}
	j.entries[e.TxnID] = e
	j.order = append(j.order, e.TxnID)
}

func (j *Journal) read() error {
	data, err := os.ReadFile(j.Path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.Split(data, []byte("\n"))
	// The piece after the last newline is a torn write when not empty: it never counted.
	complete, torn := lines[:len(lines)-1], lines[len(lines)-1]
	for i, line := range complete {
		e, ok := Entry{}, false
		if len(line) <= lineBytesMax {
			e, ok = decode(line)
		}
		if !ok {
			if i == len(complete)-1 && len(torn) == 0 {
				// The last line, complete but bad: a torn write whose newline reached the disk. Its fsync never returned.
				break
			}
			return &JournalCorrupt{Reason: fmt.Sprintf("%s: line %d is not a valid journal record; the journal is corrupt, refusing to start (an operator must look)", j.Path, i+1)}
		}
		j.put(e)
	}
	return nil
}

func (j *Journal) rewrite() error {
	tmp := j.Path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, t := range j.order {
		buf.Write(encode(j.entries[t]))
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, j.Path); err != nil {
		return err
	}
	return syncDir(j.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Get is txnID's entry, if any.
func (j *Journal) Get(txnID string) (Entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[txnID]
	return e, ok
}

// Entries are every entry, in the order of their last change.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, 0, len(j.order))
	for _, t := range j.order {
		out = append(out, j.entries[t])
	}
	return out
}

// Record writes the transaction's new state and returns once it is on disk (write, then fsync).
func (j *Journal) Record(txnID, state string, payload []byte) (Entry, error) {
	e := Entry{TxnID: txnID, State: state, Payload: payload}
	line := encode(e)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return e, fmt.Errorf("the journal %s is closed", j.Path)
	}
	if _, err := j.f.Write(line); err != nil {
		return e, err
	}
	if err := j.f.Sync(); err != nil {
		return e, err
	}
	j.put(e)
	return e, nil
}

// Close closes the file; Record fails after it.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

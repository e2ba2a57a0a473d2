package saga

// The step service's inbox: exactly-once effects under the orchestrator's
// at-least-once calls. The rules are the TypeScript step service's
// (src/saga/inbox.ts) and the Python SDK's (sdk/python/verdict/saga.py):
//
//   - A call carries a stable key (<saga>/<step>/action or .../compensate).
//     The inbox keeps one record per key, written in the same durable write
//     as the step's effect, and answers a repeat from the record.
//   - A compensation for a step whose action never ran here, or answered
//     FAILED, is recorded EMPTY and runs nothing (answered DONE: nothing is
//     left to undo).
//   - An action arriving after its compensation was recorded is refused
//     (answered FAILED and recorded so): no action runs after the saga gave
//     up on it.
//   - End drops the saga's keys (durably first); later calls of that saga
//     are refused, for the newest EndedMax ended sagas.
//
// Durable: DataDir/inbox.log, the Python step service's file format: one
// line per record, "<crc32 hex> <json>\n", fsync'd before the answer. A
// torn last line (a crash before its fsync, so before its answer) is
// dropped; a damaged line before it stops the start.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	// InboxFile is the inbox's file in the data directory.
	InboxFile = "inbox.log"
	// EndedMax: ended sagas remembered to refuse late duplicates of their calls (src/saga/inbox.ts).
	EndedMax = 100_000
	// lineBytesMax: an inbox line longer than this is not one this code wrote (an output and a reason of 64 KiB each, and the effect).
	lineBytesMax = 16 * 1024 * 1024
)

// Kinds of a call.
const (
	Action     = "action"
	Compensate = "compensate"
)

// Record statuses.
const (
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusEmpty   = "empty"
	StatusRefused = "refused"
)

// Record is one inbox line: T "step" records an answered call, "end" drops every key of a saga.
type Record struct {
	T      string `json:"t"`
	SagaID string `json:"saga_id"`
	Step   uint32 `json:"step"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	// Status is done, failed, empty or refused.
	Status string `json:"status"`
	Output string `json:"output"`
	Reason string `json:"reason"`
	// Effect is what Apply turns into the service's state change; "" for none.
	Effect string `json:"effect"`
}

// Answer is what a call is answered: DONE (Done) with an output, or FAILED with a reason.
type Answer struct {
	Done   bool
	Output string
	Reason string
}

// answerOf: an empty compensation is DONE (nothing was left to undo), a refused action FAILED.
func answerOf(r Record) Answer {
	if r.Status == StatusDone || r.Status == StatusEmpty {
		return Answer{Done: true, Output: r.Output, Reason: r.Reason}
	}
	return Answer{Reason: r.Reason}
}

// StepKey is a call's key: the saga's, the step's and the kind's, one rule.
func StepKey(sagaID string, step uint32, kind string) string {
	return fmt.Sprintf("%s/%d/%s", sagaID, step, kind)
}

func encodeRecord(r Record) []byte {
	body, _ := json.Marshal(r)
	return append([]byte(fmt.Sprintf("%08x ", crc32.ChecksumIEEE(body))), append(body, '\n')...)
}

func decodeRecord(line []byte) (Record, bool) {
	if len(line) < 10 || len(line) > lineBytesMax || line[8] != ' ' {
		return Record{}, false
	}
	body := line[9:]
	if fmt.Sprintf("%08x", crc32.ChecksumIEEE(body)) != string(line[:8]) {
		return Record{}, false
	}
	var r Record
	if err := json.Unmarshal(body, &r); err != nil || r.SagaID == "" {
		return Record{}, false
	}
	switch r.T {
	case "end":
		return r, true
	case "step":
		ok := (r.Kind == Action || r.Kind == Compensate) && r.Key == StepKey(r.SagaID, r.Step, r.Kind)
		switch r.Status {
		case StatusDone, StatusFailed, StatusEmpty, StatusRefused:
		default:
			ok = false
		}
		return r, ok
	}
	return Record{}, false
}

// InboxCorrupt is an inbox line that is neither valid nor a torn last write: an operator must look.
type InboxCorrupt struct{ Reason string }

func (e *InboxCorrupt) Error() string { return e.Reason }

// Request is one call as a handler sees it.
type Request struct {
	SagaID string
	Step   uint32
	// Kind is Action or Compensate.
	Kind  string
	Key   string
	Name  string
	Input string
	// Outputs of the steps before this one (empty for a step that did not answer DONE).
	Outputs []string
	Attempt uint32
}

// Result is a handler's answer: Done(output, effect) or Failed(reason).
type Result struct {
	failed bool
	output string
	reason string
	effect string
}

// Done: the effect happened (for a compensation: nothing is left to undo).
// effect is what Apply turns into the service's state change, recorded with
// the answer in one write; "" for none.
func Done(output, effect string) Result { return Result{output: output, effect: effect} }

// Failed: a business refusal, nothing was applied. Only an action answers it; a compensation that fails must return an error (retried).
func Failed(reason string) Result { return Result{failed: true, reason: reason} }

// Handler decides one call. An error is a transient failure: nothing is
// recorded, and the orchestrator calls again.
type Handler func(r Request) (Result, error)

// Inbox is the durable inbox in one directory; safe for concurrent use (calls are handled one at a time).
type Inbox struct {
	Path    string
	mu      sync.Mutex
	f       *os.File
	apply   func(Record)
	records map[string]Record
	ended   map[string]bool
	// endOrder is the ended sagas, oldest first, so the oldest is forgotten beyond EndedMax.
	endOrder []string
}

// OpenInbox opens (or creates) the inbox in dir and runs apply over every recorded effect, in order.
func OpenInbox(dir string, apply func(Record)) (*Inbox, error) {
	if apply == nil {
		apply = func(Record) {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	in := &Inbox{Path: filepath.Join(dir, InboxFile), apply: apply, records: map[string]Record{}, ended: map[string]bool{}}
	valid, err := in.replay()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// A torn tail is cut off, so the next record starts on a line of its own.
	if err := f.Truncate(valid); err == nil {
		_, err = f.Seek(valid, 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	in.f = f
	return in, nil
}

// replay reads the file: the records are noted and their effects applied; it answers the length of the valid lines.
func (in *Inbox) replay() (int64, error) {
	data, err := os.ReadFile(in.Path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	lines := bytes.Split(data, []byte("\n"))
	complete, torn := lines[:len(lines)-1], lines[len(lines)-1]
	var valid int64
	for i, line := range complete {
		r, ok := decodeRecord(line)
		if !ok {
			if i == len(complete)-1 && len(torn) == 0 {
				// The last line, complete but bad: a torn write whose newline reached the disk. Its fsync never returned.
				break
			}
			return 0, &InboxCorrupt{Reason: fmt.Sprintf("%s: line %d is not a valid inbox record; the inbox is corrupt, refusing to start (an operator must look)", in.Path, i+1)}
		}
		valid += int64(len(line)) + 1
		in.note(r)
		if r.T == "step" && r.Effect != "" {
			in.apply(r)
		}
	}
	return valid, nil
}

func (in *Inbox) note(r Record) {
	if r.T == "end" {
		if !in.ended[r.SagaID] {
			in.ended[r.SagaID] = true
			in.endOrder = append(in.endOrder, r.SagaID)
			for len(in.endOrder) > EndedMax {
				delete(in.ended, in.endOrder[0])
				in.endOrder = in.endOrder[1:]
			}
		}
		prefix := r.SagaID + "/"
		for k := range in.records {
			if strings.HasPrefix(k, prefix) {
				delete(in.records, k)
			}
		}
		return
	}
	in.records[r.Key] = r
}

func (in *Inbox) write(r Record) error {
	if in.f == nil {
		return fmt.Errorf("the inbox %s is closed", in.Path)
	}
	if _, err := in.f.Write(encodeRecord(r)); err != nil {
		return err
	}
	return in.f.Sync()
}

// Get is the record of key, if any.
func (in *Inbox) Get(key string) (Record, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	r, ok := in.records[key]
	return r, ok
}

// Ended says whether the saga's end is recorded here.
func (in *Inbox) Ended(sagaID string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ended[sagaID]
}

// Handle answers a call: from its record, or by the rules above, or by
// running h and recording its answer; an error is transient (nothing recorded).
func (in *Inbox) Handle(req Request, h Handler) (Answer, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if seen, ok := in.records[req.Key]; ok {
		return answerOf(seen), nil
	}
	if in.ended[req.SagaID] {
		return Answer{}, fmt.Errorf("saga %s has ended; its step %d %s is not run again", req.SagaID, req.Step, req.Kind)
	}
	otherKind := Compensate
	if req.Kind == Compensate {
		otherKind = Action
	}
	other, hasOther := in.records[StepKey(req.SagaID, req.Step, otherKind)]
	rec := Record{T: "step", SagaID: req.SagaID, Step: req.Step, Kind: req.Kind, Key: req.Key}
	switch {
	case req.Kind == Action && hasOther:
		rec.Status = StatusRefused
		rec.Reason = fmt.Sprintf("step %d of saga %s was compensated before its action arrived; the action is refused", req.Step, req.SagaID)
	case req.Kind == Compensate && !hasOther:
		rec.Status = StatusEmpty
		rec.Reason = "the action never ran here: an empty compensation is recorded"
	case req.Kind == Compensate && other.Status != StatusDone:
		rec.Status = StatusEmpty
		rec.Reason = fmt.Sprintf("the action answered %s: nothing to compensate", strings.ToUpper(other.Status))
	default:
		res, err := h(req)
		if err != nil {
			return Answer{}, err
		}
		if res.failed && req.Kind == Compensate {
			return Answer{}, fmt.Errorf("a compensation cannot answer FAILED (%s): it is retried until it is done", res.reason)
		}
		if res.failed {
			rec.Status, rec.Reason = StatusFailed, res.reason
		} else {
			rec.Status, rec.Output, rec.Effect = StatusDone, res.output, res.effect
		}
	}
	// The record and its effect are one write: both or neither survive a crash.
	if err := in.write(rec); err != nil {
		return Answer{}, err
	}
	in.note(rec)
	if rec.Effect != "" {
		in.apply(rec)
	}
	return answerOf(rec), nil
}

// End records that the saga ended (the caller confirmed it with the
// cluster): its keys go, durably first. A repeated End writes nothing.
func (in *Inbox) End(sagaID string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ended[sagaID] {
		return nil
	}
	rec := Record{T: "end", SagaID: sagaID}
	if err := in.write(rec); err != nil {
		return err
	}
	in.note(rec)
	return nil
}

// EndMany is End for many sagas, in one write and one sync.
func (in *Inbox) EndMany(sagaIDs []string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil {
		return fmt.Errorf("the inbox %s is closed", in.Path)
	}
	var recs []Record
	var buf []byte
	seen := map[string]bool{}
	for _, id := range sagaIDs {
		if in.ended[id] || seen[id] {
			continue
		}
		seen[id] = true
		r := Record{T: "end", SagaID: id}
		recs = append(recs, r)
		buf = append(buf, encodeRecord(r)...)
	}
	if len(recs) == 0 {
		return nil
	}
	if _, err := in.f.Write(buf); err != nil {
		return err
	}
	if err := in.f.Sync(); err != nil {
		return err
	}
	for _, r := range recs {
		in.note(r)
	}
	return nil
}

// Close closes the file; later calls fail (transiently, for the orchestrator).
func (in *Inbox) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil {
		return nil
	}
	err := in.f.Close()
	in.f = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

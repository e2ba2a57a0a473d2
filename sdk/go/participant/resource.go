package participant

import (
	"encoding/json"
	"sync"
	"time"
)

// Resource is what a participant keeps its data in. The engine calls
// Prepare and, only once it returned no reason, writes "prepared" to the
// journal and votes YES. Commit and Rollback must be idempotent: after a
// crash the engine calls them again for a transaction whose decision it had
// not yet journalled.
type Resource interface {
	// Kind is shown by `verdict participants`: 0-32 of [a-z0-9-], starting with a letter.
	Kind() string
	// Prepare does everything but commit and makes it durable; it returns "",
	// or why it votes NO (nothing then held). timeoutMs is the transaction's
	// remaining budget from the PREPARE (0: none given).
	Prepare(txnID string, payload []byte, timeoutMs uint64) (reason string, err error)
	// Commit commits a prepared transaction; idempotent.
	Commit(txnID string) error
	// Rollback rolls back a prepared transaction, or releases work held for one never prepared; idempotent.
	Rollback(txnID string) error
	// Restore is called at start, once per journal entry: what the journal says about txnID.
	Restore(txnID, state string, payload []byte) error
	// PreparedHere lists the transactions the resource itself holds prepared (PostgreSQL: pg_prepared_xacts), for recovery.
	PreparedHere() ([]string, error)
	Close() error
}

// ReserveTTLReader is what a TCC resource whose Try may give a TTL adds to
// Resource: how long txnID's reserve has left now (ok false: nothing held for
// it with a TTL). A YES vote carries it (Vote.reserve_ttl_ms): a duration, so
// the leader counts it from the vote's arrival and the clocks need not agree.
type ReserveTTLReader interface {
	ReserveTTL(txnID string) (left time.Duration, ok bool, err error)
}

// ReserveTTLMax is the longest reserve TTL a vote may carry (30 days); a node refuses a vote with more.
const ReserveTTLMax = 30 * 24 * time.Hour

// reserveTTLMs is what a YES for txnID says of its reserve's TTL: 0 when none
// (or unreadable: the YES stands without it), else 1 ms .. ReserveTTLMax in ms.
func (e *Engine) reserveTTLMs(txnID string) uint64 {
	r, ok := e.Resource.(ReserveTTLReader)
	if !ok {
		return 0
	}
	left, ok, err := r.ReserveTTL(txnID)
	if err != nil {
		e.Log("reserve-ttl-unread", map[string]any{"txn_id": txnID, "participant_id": e.ParticipantID, "error": clip(err.Error(), 512)})
		return 0
	}
	if !ok {
		return 0
	}
	ms := left.Milliseconds()
	if ms < 1 {
		// Past its TTL and still held (the cluster not reached yet): the leader shows it expired, never unknown.
		ms = 1
	}
	if ms > ReserveTTLMax.Milliseconds() {
		ms = ReserveTTLMax.Milliseconds()
	}
	return uint64(ms)
}

// MemoryResource keeps keys and values in memory; a payload {"set": {key: value}} writes them at commit.
// Its durable state is the journal: a prepared transaction's payload is in
// it, and the values are rebuilt from the committed entries at start.
type MemoryResource struct {
	mu     sync.Mutex
	values map[string]any
	held   map[string]map[string]any
}

// NewMemoryResource is an empty memory resource.
func NewMemoryResource() *MemoryResource {
	return &MemoryResource{values: map[string]any{}, held: map[string]map[string]any{}}
}

func memoryWrites(payload []byte) (map[string]any, bool) {
	if len(payload) == 0 {
		return map[string]any{}, true
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(payload, &o); err != nil || o == nil {
		return nil, false
	}
	raw, ok := o["set"]
	if !ok {
		return map[string]any{}, true
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return nil, false
	}
	return s, true
}

func (m *MemoryResource) Kind() string { return "memory" }

func (m *MemoryResource) Prepare(txnID string, payload []byte, _ uint64) (string, error) {
	w, ok := memoryWrites(payload)
	if !ok {
		return `the payload is not JSON of the form {"set": {key: value}}`, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held[txnID] = w
	return "", nil
}

func (m *MemoryResource) Commit(txnID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.held[txnID] {
		m.values[k] = v
	}
	delete(m.held, txnID)
	return nil
}

func (m *MemoryResource) Rollback(txnID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.held, txnID)
	return nil
}

func (m *MemoryResource) Restore(txnID, state string, payload []byte) error {
	w, _ := memoryWrites(payload)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch state {
	case Prepared:
		m.held[txnID] = w
	case Committed:
		for k, v := range w {
			m.values[k] = v
		}
	}
	return nil
}

func (m *MemoryResource) PreparedHere() ([]string, error) { return nil, nil }
func (m *MemoryResource) Close() error                    { return nil }

// Values is a copy of the committed values.
func (m *MemoryResource) Values() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]any, len(m.values))
	for k, v := range m.values {
		out[k] = v
	}
	return out
}

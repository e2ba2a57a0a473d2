package client

import "math"

// The SDK's retry rule, without I/O: the same rule as the TypeScript SDK's
// (src/client/retry-policy.ts) and the Python SDK's (sdk/python/verdict/retry.py),
// written down for users in docs/go.md.
//
// R2 is why `begin` needs a rule: a new leader asked to begin an id a vanished
// leader already prepared would prepare it a second time. So a Commit carries
// `begin` only while no earlier attempt may have reached a leader.

// Failure is what one failed attempt says about the request.
type Failure string

const (
	// Refused: the cluster's answer (INVALID_ARGUMENT, FAILED_PRECONDITION, ...): not retried, and nothing was done.
	Refused Failure = "refused"
	// NotActedOn: certainly did nothing (UNAVAILABLE with verdict-reason NOT_LEADER or NO_LEADER, or no connection made): retried, and a Commit may still carry begin.
	NotActedOn Failure = "not-acted-on"
	// MaybeActedOn: may have reached a leader and taken effect (UNKNOWN_OUTCOME, a deadline, a cut connection): retried without begin.
	MaybeActedOn Failure = "maybe-acted-on"
	// Failed: not retried, and may have taken effect (INTERNAL, CANCELLED, ...): a commit's outcome is then unknown.
	Failed Failure = "failed"
	// Answered: the attempt was answered.
	Answered Failure = "answered"
)

// refusals are the codes by which the cluster refused the request itself: nothing was decided because of it.
var refusals = map[string]bool{
	"INVALID_ARGUMENT":    true,
	"FAILED_PRECONDITION": true,
	"RESOURCE_EXHAUSTED":  true,
	"NOT_FOUND":           true,
	"ALREADY_EXISTS":      true,
	"PERMISSION_DENIED":   true,
	"UNAUTHENTICATED":     true,
	"OUT_OF_RANGE":        true,
	"UNIMPLEMENTED":       true,
}

// ClassifyFailure says what one failed attempt means: code is the gRPC code's
// name, reason the verdict-reason metadata ("" when none), neverConnected
// whether no connection to the node was ever made.
func ClassifyFailure(code, reason string, neverConnected bool) Failure {
	if code == "UNAVAILABLE" {
		if reason == "NOT_LEADER" || reason == "NO_LEADER" {
			return NotActedOn
		}
		if reason == "" && neverConnected {
			return NotActedOn
		}
		return MaybeActedOn
	}
	if code == "DEADLINE_EXCEEDED" {
		return MaybeActedOn
	}
	if refusals[code] {
		return Refused
	}
	return Failed
}

// Retryable says whether another node may still answer after this failure.
func Retryable(f Failure) bool { return f == NotActedOn || f == MaybeActedOn }

// BeginRule is R2 for one transaction's Commits: begin rides along only while
// every attempt so far was refused or certainly did nothing.
type BeginRule struct{ mayBegin bool }

// NewBeginRule: begun is true for a transaction begun with Begin, false when its first Commit begins it.
func NewBeginRule(begun bool) *BeginRule { return &BeginRule{mayBegin: !begun} }

// Begins says whether the next attempt carries begin.
func (r *BeginRule) Begins() bool { return r.mayBegin }

// Attempted records one attempt: Answered, or a failure as ClassifyFailure says.
func (r *BeginRule) Attempted(result Failure) {
	r.mayBegin = r.mayBegin && (result == Refused || result == NotActedOn)
}

// Backoff is the pause between rounds of failed attempts.
type Backoff struct {
	InitialMs  float64
	MaxMs      float64
	Multiplier float64
}

// DefaultBackoff is the TypeScript and Python SDKs' default.
var DefaultBackoff = Backoff{InitialMs: 50, MaxMs: 1_000, Multiplier: 2}

// PauseMs is the pause after round (0-based): capped exponential with equal
// jitter (at least half the pause; random is in [0, 1)).
func PauseMs(round int, b Backoff, random float64) float64 {
	capMs := math.Min(b.MaxMs, b.InitialMs*math.Pow(b.Multiplier, float64(round)))
	return capMs/2 + random*(capMs/2)
}

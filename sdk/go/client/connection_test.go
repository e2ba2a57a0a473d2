package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	pb "verdict/sdk/go/pb/coordinatorpb"
)

// fakeNode is a Coordinator whose Commit answers come from a script; it records what it was asked.
type fakeNode struct {
	pb.UnimplementedCoordinatorServer
	mu      sync.Mutex
	address string
	asked   []*pb.CommitRequest
	answer  func(n int, r *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD)
}

func (f *fakeNode) Commit(ctx context.Context, r *pb.CommitRequest) (*pb.TxnOutcome, error) {
	f.mu.Lock()
	f.asked = append(f.asked, r)
	n := len(f.asked)
	f.mu.Unlock()
	a, err, md := f.answer(n, r)
	if md != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
	return a, err
}

func (f *fakeNode) requests() []*pb.CommitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pb.CommitRequest(nil), f.asked...)
}

func startFake(t *testing.T, answer func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD)) *fakeNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{address: lis.Addr().String(), answer: answer}
	s := grpc.NewServer()
	pb.RegisterCoordinatorServer(s, f)
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	return f
}

func committed(r *pb.CommitRequest) *pb.TxnOutcome {
	return &pb.TxnOutcome{TxnId: r.TxnId, Outcome: pb.Outcome_OUTCOME_COMMITTED, DecisionIndex: 7}
}

func notLeader(leader string) (*pb.TxnOutcome, error, metadata.MD) {
	return nil, status.Error(codes.Unavailable, "not the leader"), metadata.Pairs(StatusReasonKey, "NOT_LEADER", LeaderAddressKey, leader)
}

func newTestClient(t *testing.T, addrs ...string) *Client {
	t.Helper()
	c, err := New(addrs, Options{Insecure: true, CallTimeout: 5 * time.Second, AttemptTimeout: time.Second, Backoff: &Backoff{InitialMs: 1, MaxMs: 5, Multiplier: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func commitOne(t *testing.T, c *Client, txn string) (OutcomeResult, error) {
	tx, err := c.Transaction(TxnOptions{TxnID: txn})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Enlist("p1", map[string]any{"set": map[string]int{"k": 1}}); err != nil {
		t.Fatal(err)
	}
	return tx.Commit(context.Background(), 0)
}

func TestFollowsTheLeaderHintAndKeepsBegin(t *testing.T) {
	leader := startFake(t, func(_ int, r *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) { return committed(r), nil, nil })
	follower := startFake(t, func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) { return notLeader(leader.address) })
	c := newTestClient(t, follower.address)
	r, err := commitOne(t, c, "t1")
	if err != nil || r.Outcome != Committed || r.DecisionIndex != 7 {
		t.Fatalf("%v %v", r, err)
	}
	// NOT_LEADER certainly did nothing: the attempt at the leader still begins the transaction.
	if q := leader.requests(); len(q) != 1 || !q[0].Begin || string(q[0].Participants[0].Payload) != `{"set":{"k":1}}` {
		t.Fatalf("the leader was asked %v", q)
	}
	// The next call goes to the leader first.
	if _, err := commitOne(t, c, "t2"); err != nil || len(follower.requests()) != 1 {
		t.Fatalf("the second call asked the follower again: %v %d", err, len(follower.requests()))
	}
}

func TestARetryAfterAnAttemptThatMayHaveActedDoesNotBegin(t *testing.T) {
	node := startFake(t, func(n int, r *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) {
		if n == 1 {
			return nil, status.Error(codes.Unavailable, "the leader stepped down while committing"), metadata.Pairs(StatusReasonKey, "UNKNOWN_OUTCOME")
		}
		return committed(r), nil, nil
	})
	c := newTestClient(t, node.address)
	if r, err := commitOne(t, c, "t1"); err != nil || r.Outcome != Committed {
		t.Fatalf("%v %v", r, err)
	}
	q := node.requests()
	if len(q) != 2 || !q[0].Begin || q[1].Begin || q[1].TimeoutMs != 0 {
		t.Fatalf("R2: the retry must not begin: %v", q)
	}
}

func TestRefusalsAndUnknownOutcomes(t *testing.T) {
	refusing := startFake(t, func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) {
		return nil, status.Error(codes.FailedPrecondition, "participant p1 is not registered"), nil
	})
	_, err := commitOne(t, newTestClient(t, refusing.address), "t1")
	var ve *Error
	if !errors.As(err, &ve) || ve.Code != "FAILED_PRECONDITION" || len(refusing.requests()) != 1 {
		t.Fatalf("a refusal is the answer, not retried: %v", err)
	}
	failing := startFake(t, func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) {
		return nil, status.Error(codes.Internal, "boom"), nil
	})
	_, err = commitOne(t, newTestClient(t, failing.address), "t1")
	var unknown *OutcomeUnknownError
	if !errors.As(err, &unknown) || unknown.TxnID != "t1" {
		t.Fatalf("INTERNAL may have acted: the outcome is unknown, never guessed: %v", err)
	}
	inProgress := startFake(t, func(_ int, r *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) {
		return &pb.TxnOutcome{TxnId: r.TxnId, Outcome: pb.Outcome_OUTCOME_IN_PROGRESS}, nil, nil
	})
	if _, err = commitOne(t, newTestClient(t, inProgress.address), "t1"); !errors.As(err, &unknown) {
		t.Fatalf("IN_PROGRESS is not an outcome: %v", err)
	}
	other := startFake(t, func(_ int, r *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) {
		return &pb.TxnOutcome{TxnId: "someone-else", Outcome: pb.Outcome_OUTCOME_COMMITTED}, nil, nil
	})
	if _, err = commitOne(t, newTestClient(t, other.address), "t1"); !errors.As(err, &ve) || ve.Code != "INTERNAL" {
		t.Fatalf("an answer about another transaction is refused: %v", err)
	}
	// Nobody listening: not acted on, retried until the deadline, then unknown (Exhausted), and it never guesses.
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	c, _ := New([]string{dead}, Options{Insecure: true, CallTimeout: 300 * time.Millisecond})
	defer c.Close()
	if _, err = commitOne(t, c, "t1"); !errors.As(err, &unknown) {
		t.Fatalf("no node answered: %v", err)
	}
}

func TestHintsAreBounded(t *testing.T) {
	// Two nodes that send the caller back and forth: at most MaxRedirects hints per round, and the call ends at its deadline.
	var a, b *fakeNode
	a = startFake(t, func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) { return notLeader(b.address) })
	b = startFake(t, func(int, *pb.CommitRequest) (*pb.TxnOutcome, error, metadata.MD) { return notLeader(a.address) })
	c, _ := New([]string{a.address}, Options{Insecure: true, CallTimeout: 200 * time.Millisecond, Backoff: &Backoff{InitialMs: 50, MaxMs: 50, Multiplier: 1}})
	defer c.Close()
	_, err := commitOne(t, c, "t1")
	var unknown *OutcomeUnknownError
	if !errors.As(err, &unknown) {
		t.Fatalf("%v", err)
	}
	// Every attempt was NOT_LEADER, so nothing could have begun it elsewhere: each still carries begin.
	for _, q := range append(a.requests(), b.requests()...) {
		if !q.Begin {
			t.Fatal("NOT_LEADER keeps begin")
		}
	}
	// A round is the first address and at most MaxRedirects hints; rounds are 25-50 ms apart (equal jitter).
	// Unbounded hints would ping-pong without a pause: thousands of attempts.
	if n := len(a.requests()) + len(b.requests()); n > (DefaultMaxRedirects+1)*(200/25+1) {
		t.Fatalf("%d attempts in 200 ms: hints are not bounded per round", n)
	}
}

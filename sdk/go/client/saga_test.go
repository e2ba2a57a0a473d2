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
	spb "verdict/sdk/go/pb/sagapb"
)

// fakeSagaNode is a node's Sagas service: a follower (it names the leader) or the leader, which answers from a script.
type fakeSagaNode struct {
	spb.UnimplementedSagasServer
	mu       sync.Mutex
	leader   string
	started  []*spb.StartSagaRequest
	statuses int
	status   func(n int, r *spb.SagaStatusRequest) (*spb.SagaInfo, error)
}

func (f *fakeSagaNode) follow(ctx context.Context) error {
	if f.leader == "" {
		return nil
	}
	_ = grpc.SetTrailer(ctx, metadata.Pairs(StatusReasonKey, "NOT_LEADER", LeaderAddressKey, f.leader))
	return status.Error(codes.Unavailable, "not the leader")
}

func (f *fakeSagaNode) StartSaga(ctx context.Context, r *spb.StartSagaRequest) (*spb.SagaInfo, error) {
	if err := f.follow(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, r)
	return &spb.SagaInfo{SagaId: r.SagaId, State: SagaRunning, StepStatus: []string{"pending", "pending"}, PivotPlusOne: r.PivotPlusOne, Steps: r.Steps, Type: r.Type, Labels: r.Labels}, nil
}

func (f *fakeSagaNode) SagaStatus(ctx context.Context, r *spb.SagaStatusRequest) (*spb.SagaInfo, error) {
	if err := f.follow(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.statuses++
	n := f.statuses
	f.mu.Unlock()
	return f.status(n, r)
}

func startSagaNode(t *testing.T, f *fakeSagaNode) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	spb.RegisterSagasServer(s, f)
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestStartSagaGoesToTheLeaderWithTheWholeDefinition(t *testing.T) {
	leader := &fakeSagaNode{}
	leaderAddress := startSagaNode(t, leader)
	follower := startSagaNode(t, &fakeSagaNode{leader: leaderAddress})
	c := newTestClient(t, follower)
	pivot := 1
	s, err := c.StartSaga(context.Background(), SagaSpec{
		Steps: []SagaStep{{Service: "shop", Name: "reserve", Input: "2"}, {Service: "bank", Name: "charge", Input: "40"}},
		Pivot: &pivot, Type: "order", Labels: map[string]string{"order": "ORD-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(leader.started) != 1 {
		t.Fatalf("the leader got %d starts", len(leader.started))
	}
	r := leader.started[0]
	if r.SagaId != s.ID || CheckTxnID(r.SagaId) != nil || len(r.Steps) != 2 || r.Steps[1].Service != "bank" || r.Steps[1].Name != "charge" || r.Steps[1].Input != "40" ||
		r.PivotPlusOne != 2 || r.Type != "order" || r.Labels["order"] != "ORD-1" {
		t.Fatalf("the start sent: %v", r)
	}
	if s.State != SagaRunning || s.Pivot != 1 || s.Ended() {
		t.Fatalf("the answer: %+v", s)
	}
}

func TestStartSagaRefusesABadDefinitionBeforeSendingIt(t *testing.T) {
	leader := &fakeSagaNode{}
	c := newTestClient(t, startSagaNode(t, leader))
	bad := 5
	many := make([]SagaStep, SagaStepsMax+1)
	for i := range many {
		many[i] = SagaStep{Service: "shop", Name: "x"}
	}
	for name, spec := range map[string]SagaSpec{
		"no steps":            {},
		"too many steps":      {Steps: many},
		"a slash in the id":   {ID: "a/b", Steps: []SagaStep{{Service: "shop", Name: "x"}}},
		"a space in the id":   {ID: "a b", Steps: []SagaStep{{Service: "shop", Name: "x"}}},
		"a pivot out of room": {Steps: []SagaStep{{Service: "shop", Name: "x"}}, Pivot: &bad},
		"a bad service id":    {Steps: []SagaStep{{Service: "", Name: "x"}}},
	} {
		var e *Error
		if _, err := c.StartSaga(context.Background(), spec); !errors.As(err, &e) || e.Code != "INVALID_ARGUMENT" {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if len(leader.started) != 0 {
		t.Fatalf("a bad definition was sent: %v", leader.started)
	}
}

func TestWaitSagaAsksAgainUntilTheSagaEnded(t *testing.T) {
	leader := &fakeSagaNode{status: func(n int, r *spb.SagaStatusRequest) (*spb.SagaInfo, error) {
		switch {
		case n == 1:
			return nil, status.Error(codes.NotFound, "not applied here yet")
		case n < 4:
			if r.WaitMs == 0 {
				return nil, status.Error(codes.Internal, "WaitSaga must ask with a wait")
			}
			return &spb.SagaInfo{SagaId: r.SagaId, State: SagaCompensating}, nil
		}
		return &spb.SagaInfo{SagaId: r.SagaId, State: SagaCompensated, StepStatus: []string{"compensated", "failed"}}, nil
	}}
	c := newTestClient(t, startSagaNode(t, leader))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.WaitSaga(ctx, "s1")
	if err != nil || s.State != SagaCompensated || s.Steps[0] != "compensated" || leader.statuses != 4 {
		t.Fatalf("%+v %v after %d questions", s, err, leader.statuses)
	}
	var e *Error
	if _, err := c.SagaStatus(ctx, "s1", 0); err != nil {
		t.Fatal(err)
	}
	other := &fakeSagaNode{status: func(int, *spb.SagaStatusRequest) (*spb.SagaInfo, error) {
		return &spb.SagaInfo{SagaId: "s2", State: SagaFinished}, nil
	}}
	c2 := newTestClient(t, startSagaNode(t, other))
	if _, err := c2.SagaStatus(ctx, "s1", 0); !errors.As(err, &e) || e.Code != "INTERNAL" {
		t.Fatalf("an answer about another saga: %v, want INTERNAL", err)
	}
}

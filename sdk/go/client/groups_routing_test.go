package client

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	pb "verdict/sdk/go/pb/coordinatorpb"
)

// A fake cluster of four nodes and four decision groups, node i leading group
// i until a test moves leadership: each node refuses what it does not lead as
// a real one does (NOT_LEADER naming the group's leader, plus verdict-group).
type groupCluster struct {
	mu       sync.Mutex
	leaderOf []int
	nodes    []*groupNode
	// lists holds, per group, what its leader answers to ListTransactions (transactions_test.go).
	lists [][]*pb.TxnInfo
}

type groupNode struct {
	pb.UnimplementedCoordinatorServer
	c       *groupCluster
	i       int
	address string
	commits []string
	status  int
	// listed holds the verdict-group of each ListTransactions this node answered ("" for none).
	listed []string
}

const testGroups = 4

// One id per group at G = 4.
var idOfGroup = []string{"order-42", "t2", "t10", "t1"}

func (n *groupNode) ClusterStatus(ctx context.Context, _ *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.status++
	st := &pb.ClusterStatusResponse{ClusterId: "test-cluster", NodeId: fmt.Sprintf("n%d", n.i), GroupCount: testGroups}
	for g, l := range n.c.leaderOf {
		st.Groups = append(st.Groups, &pb.GroupStatus{Group: uint32(g), LeaderId: fmt.Sprintf("n%d", l), LeaderAddress: n.c.nodes[l].address})
	}
	return st, nil
}

func (n *groupNode) Commit(ctx context.Context, r *pb.CommitRequest) (*pb.TxnOutcome, error) {
	n.c.mu.Lock()
	n.commits = append(n.commits, r.TxnId)
	g := GroupOf(r.TxnId, testGroups)
	leader := n.c.leaderOf[g]
	address := n.c.nodes[leader].address
	n.c.mu.Unlock()
	if leader != n.i {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(StatusReasonKey, "NOT_LEADER", LeaderAddressKey, address, GroupKey, fmt.Sprint(g)))
		return nil, status.Errorf(codes.Unavailable, "not the leader of group %d", g)
	}
	return &pb.TxnOutcome{TxnId: r.TxnId, Outcome: pb.Outcome_OUTCOME_COMMITTED, DecisionIndex: 7}, nil
}

func startGroupCluster(t *testing.T) *groupCluster {
	t.Helper()
	c := &groupCluster{leaderOf: []int{0, 1, 2, 3}}
	for i := 0; i < testGroups; i++ {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n := &groupNode{c: c, i: i, address: lis.Addr().String()}
		s := grpc.NewServer()
		pb.RegisterCoordinatorServer(s, n)
		go s.Serve(lis) //nolint:errcheck
		t.Cleanup(s.Stop)
		c.nodes = append(c.nodes, n)
	}
	return c
}

func (c *groupCluster) commits() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = append([]string{}, n.commits...)
	}
	return out
}

func (c *groupCluster) statuses() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.status
	}
	return out
}

func mustCommit(t *testing.T, c *Client, id string) {
	t.Helper()
	r, err := commitOne(t, c, id)
	if err != nil || r.Outcome != "COMMITTED" {
		t.Fatalf("commit %s: %v %v", id, r, err)
	}
}

func TestGroupsAfterConnectEachTransactionGoesStraightToItsGroupsLeader(t *testing.T) {
	gc := startGroupCluster(t)
	c := newTestClient(t, gc.nodes[0].address)
	st, err := c.Conn.Connect(context.Background())
	if err != nil || st.GroupCount != testGroups || c.Conn.Groups() != testGroups {
		t.Fatalf("connect: %v %v, routing by %d groups", st, err, c.Conn.Groups())
	}
	for _, id := range idOfGroup {
		mustCommit(t, c, id)
	}
	if got, want := gc.commits(), [][]string{{"order-42"}, {"t2"}, {"t10"}, {"t1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commits per node %v, want %v", got, want)
	}
	if got := gc.statuses(); !reflect.DeepEqual(got, []int{1, 0, 0, 0}) {
		t.Fatalf("status questions per node %v", got)
	}
}

func TestGroupsTheFirstRefusalNamingAGroupTeachesThem(t *testing.T) {
	gc := startGroupCluster(t)
	c := newTestClient(t, gc.nodes[0].address)
	mustCommit(t, c, "t1") // group 3's: node 0 refuses naming node 3 and group 3
	mustCommit(t, c, "t2")
	mustCommit(t, c, "t10")
	if got, want := gc.commits(), [][]string{{"t1"}, {"t2"}, {"t10"}, {"t1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commits per node %v, want %v", got, want)
	}
	if got := gc.statuses(); !reflect.DeepEqual(got, []int{1, 0, 0, 0}) {
		t.Fatalf("status questions per node %v", got)
	}
}

func TestGroupsAStaleHintOfOneGroupIsCorrectedByItsRedirect(t *testing.T) {
	gc := startGroupCluster(t)
	c := newTestClient(t, gc.nodes[0].address)
	if _, err := c.Conn.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	gc.mu.Lock()
	gc.leaderOf[1] = 2 // group 1's leadership moves from node 1 to node 2
	gc.mu.Unlock()
	if GroupOf("t3", testGroups) != 1 {
		t.Fatal("t3 is not group 1's")
	}
	mustCommit(t, c, "t2")
	mustCommit(t, c, "t3")
	mustCommit(t, c, "t1")
	if got, want := gc.commits(), [][]string{{}, {"t2"}, {"t2", "t3"}, {"t1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commits per node %v, want %v", got, want)
	}
	if got := gc.statuses(); !reflect.DeepEqual(got, []int{1, 0, 0, 0}) {
		t.Fatalf("status questions per node %v", got)
	}
}

package client

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"sort"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	pb "verdict/sdk/go/pb/coordinatorpb"
)

// ListTransactions answers one group's listing as a real node does: the
// group named in verdict-group (or the asked transaction's), from its leader
// only; any other node refuses NOT_LEADER naming the leader.
func (n *groupNode) ListTransactions(ctx context.Context, r *pb.ListTransactionsRequest) (*pb.ListTransactionsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	text := ""
	if v := md.Get(GroupKey); len(v) > 0 {
		text = v[0]
	}
	g := GroupOf(r.TxnId, testGroups)
	if text != "" {
		g = parseGroup(text)
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if g < 0 || g >= testGroups {
		return nil, status.Errorf(codes.InvalidArgument, "no group %q", text)
	}
	leader := n.c.leaderOf[g]
	if leader != n.i {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(StatusReasonKey, "NOT_LEADER", LeaderAddressKey, n.c.nodes[leader].address, GroupKey, fmt.Sprint(g)))
		return nil, status.Errorf(codes.Unavailable, "not the leader of group %d", g)
	}
	n.listed = append(n.listed, text)
	var out []*pb.TxnInfo
	for _, t := range n.c.lists[g] {
		if r.TxnId == "" || r.TxnId == t.TxnId {
			out = append(out, t)
		}
	}
	return &pb.ListTransactionsResponse{Transactions: out}, nil
}

// idsOfGroup is count transaction ids that group g decides at G = 4.
func idsOfGroup(g, count int) []string {
	var out []string
	for i := 0; len(out) < count; i++ {
		if id := fmt.Sprintf("t-%d", i); GroupOf(id, testGroups) == g {
			out = append(out, id)
		}
	}
	return out
}

func (c *groupCluster) listedPerNode() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = append([]string{}, n.listed...)
		sort.Strings(out[i])
		n.listed = nil
	}
	return out
}

func TestTransactionsAsksEachGroupsLeaderAndMergesOldestFirst(t *testing.T) {
	gc := startGroupCluster(t)
	// Nodes 0 and 1 lead two groups each.
	gc.leaderOf = []int{0, 1, 0, 1}
	var ages []uint64
	for g := 0; g < testGroups; g++ {
		var list []*pb.TxnInfo
		for i, id := range idsOfGroup(g, 2) {
			age := uint64(100*(g+1) + i)
			list = append(list, &pb.TxnInfo{TxnId: id, AgeMs: age})
			ages = append(ages, age)
		}
		gc.lists = append(gc.lists, list)
	}
	sort.Slice(ages, func(i, j int) bool { return ages[i] > ages[j] })
	c := newTestClient(t, gc.nodes[2].address)
	listed, err := c.Transactions(context.Background(), TransactionFilter{}, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gc.listedPerNode(), [][]string{{"0", "2"}, {"1", "3"}, {}, {}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("groups listed per node %v, want %v", got, want)
	}
	var got []uint64
	groups := map[int]bool{}
	for _, l := range listed {
		got = append(got, l.AgeMs)
		if l.Group != GroupOf(l.TxnId, testGroups) {
			t.Fatalf("%s listed in group %d", l.TxnId, l.Group)
		}
		groups[l.Group] = true
	}
	if !reflect.DeepEqual(got, ages) || len(groups) != testGroups {
		t.Fatalf("ages %v (want %v), groups %v", got, ages, groups)
	}
	// The limit holds over the merge: the oldest three of all groups, not three per group.
	top, err := c.Transactions(context.Background(), TransactionFilter{Limit: 3}, CallOptions{})
	if err != nil || len(top) != 3 || top[0].TxnId != listed[0].TxnId || top[2].TxnId != listed[2].TxnId {
		t.Fatalf("limit 3: %v %v", top, err)
	}
	gc.listedPerNode()
	// One transaction by id goes to its group's leader alone, without the group metadata.
	one := idsOfGroup(3, 1)[0]
	r, err := c.Transactions(context.Background(), TransactionFilter{TxnID: one}, CallOptions{})
	if err != nil || len(r) != 1 || r[0].TxnId != one || r[0].Group != 3 {
		t.Fatalf("by id: %v %v", r, err)
	}
	if got, want := gc.listedPerNode(), [][]string{{}, {""}, {}, {}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("by id, listed per node %v, want %v", got, want)
	}
}

// A node of one group, or of a version that does not report groups.
type oneGroupNode struct {
	pb.UnimplementedCoordinatorServer
	mu     sync.Mutex
	calls  []string
	groups []string
}

func (n *oneGroupNode) ClusterStatus(context.Context, *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "ClusterStatus")
	return &pb.ClusterStatusResponse{ClusterId: "test-cluster"}, nil
}

func (n *oneGroupNode) ListTransactions(ctx context.Context, r *pb.ListTransactionsRequest) (*pb.ListTransactionsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, fmt.Sprintf("ListTransactions in_flight=%v", r.InFlight))
	n.groups = append(n.groups, md.Get(GroupKey)...)
	return &pb.ListTransactionsResponse{Transactions: []*pb.TxnInfo{{TxnId: "t-1", AgeMs: 5}, {TxnId: "t-2", AgeMs: 9}}}, nil
}

func TestTransactionsOfANodeThatReportsNoGroupsAreOneGroups(t *testing.T) {
	n := &oneGroupNode{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterCoordinatorServer(s, n)
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	c := newTestClient(t, lis.Addr().String())
	listed, err := c.Transactions(context.Background(), TransactionFilter{InFlight: true}, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The node's own order is kept; every transaction is group 0's.
	var got []string
	for _, l := range listed {
		got = append(got, fmt.Sprintf("%s/%d", l.TxnId, l.Group))
	}
	if want := []string{"t-1/0", "t-2/0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if want := []string{"ClusterStatus", "ListTransactions in_flight=true"}; !reflect.DeepEqual(n.calls, want) || len(n.groups) != 0 {
		t.Fatalf("calls %v, groups sent %v", n.calls, n.groups)
	}
}

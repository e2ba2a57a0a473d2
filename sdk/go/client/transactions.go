package client

import (
	"context"
	"sort"
	"sync"

	pb "verdict/sdk/go/pb/coordinatorpb"
)

// What a listing returns when it names no limit (the node's own default), and the most it returns.
const (
	ListLimitDefault = 1_000
	ListLimitMax     = 10_000
)

// TransactionFilter says which transactions Transactions lists; at most one filter applies.
type TransactionFilter struct {
	// InFlight keeps those still being prepared or delivered.
	InFlight bool
	// InDoubt keeps the undecided ones older than the cluster's in-doubt threshold.
	InDoubt bool
	// Unacked keeps the decided ones some participant has not acknowledged.
	Unacked bool
	// Heuristic keeps those with a heuristic record or an operator's resolution.
	Heuristic bool
	// TxnID asks for this transaction alone.
	TxnID string
	// Limit: 0 is the node's default (ListLimitDefault); more than ListLimitMax is ListLimitMax.
	Limit uint32
}

// TransactionInfo is a listed transaction: the node's record of it and the decision group that decides it.
type TransactionInfo struct {
	*pb.TxnInfo
	Group int
}

// Transactions lists the transactions the cluster knows, oldest first, each with its decision group.
//
// At G > 1 what a group's leader tracks is that leader's to say, so each group
// is asked of its own leader (the call carries verdict-group metadata) and the
// lists are merged, oldest first, to the limit. The groups are learnt once per
// client from ClusterStatus; a node that does not report them is listed as a
// cluster of one group.
func (c *Client) Transactions(ctx context.Context, f TransactionFilter, o CallOptions) ([]TransactionInfo, error) {
	req := &pb.ListTransactionsRequest{InFlight: f.InFlight, InDoubt: f.InDoubt, Unacked: f.Unacked, Heuristic: f.Heuristic, TxnId: f.TxnID, Limit: f.Limit}
	if f.TxnID == "" && !c.Conn.GroupsKnown() {
		// The groups, once per client; a node that cannot say (an older version) is listed as a cluster of one group.
		_ = c.Conn.Call(ctx, "ClusterStatus", &pb.ClusterStatusRequest{}, &pb.ClusterStatusResponse{}, CallOptions{CallTimeout: o.CallTimeout, AttemptTimeout: o.AttemptTimeout})
	}
	groups := c.Conn.Groups()
	if f.TxnID != "" || groups == 1 {
		r := &pb.ListTransactionsResponse{}
		if err := c.Conn.Call(ctx, "ListTransactions", req, r, o); err != nil {
			return nil, err
		}
		return c.transactionInfos(r.GetTransactions()), nil
	}
	each := make([][]*pb.TxnInfo, groups)
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			og := o
			og.Group = &g
			r := &pb.ListTransactionsResponse{}
			if err := c.Conn.Call(ctx, "ListTransactions", req, r, og); err != nil {
				errs[g] = err
				return
			}
			each[g] = r.GetTransactions()
		}(g)
	}
	wg.Wait()
	var all []*pb.TxnInfo
	for g := 0; g < groups; g++ {
		if errs[g] != nil {
			return nil, errs[g]
		}
		all = append(all, each[g]...)
	}
	listed := c.transactionInfos(all)
	sort.SliceStable(listed, func(i, j int) bool { return listed[i].GetAgeMs() > listed[j].GetAgeMs() })
	limit := ListLimitDefault
	if f.Limit > 0 {
		limit = int(f.Limit)
		if limit > ListLimitMax {
			limit = ListLimitMax
		}
	}
	if len(listed) > limit {
		listed = listed[:limit]
	}
	return listed, nil
}

func (c *Client) transactionInfos(ts []*pb.TxnInfo) []TransactionInfo {
	out := make([]TransactionInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, TransactionInfo{TxnInfo: t, Group: c.Conn.GroupOf(t.GetTxnId())})
	}
	return out
}

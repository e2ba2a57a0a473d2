// Package client is the application API of Verdict: begin a transaction,
// enlist participants, commit or abort, and ask about outcomes. The Go twin
// of the TypeScript SDK's VerdictClient (src/client) and the Python SDK's
// Client (sdk/python/verdict/client.py).
//
// A transaction from Client.Transaction is not begun on the cluster: its
// first Commit attempt begins it too, and every later attempt is a plain
// Commit, so a leader that did not begin it aborts it rather than preparing
// it a second time (R2). When no answer arrives, Commit returns an
// *OutcomeUnknownError instead of guessing.
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	pb "verdict/sdk/go/pb/coordinatorpb"
)

// CommitGrace is the room left for the decision's replication after the participants' prepare timeout.
const CommitGrace = 2 * time.Second

// Outcome names, as the cluster's Outcome enum.
const (
	Committed  = "COMMITTED"
	Aborted    = "ABORTED"
	InProgress = "IN_PROGRESS"
	Unknown    = "UNKNOWN"
)

// OutcomeResult is what the cluster's applied state says about a transaction (R1).
type OutcomeResult struct {
	TxnID string
	// Outcome is COMMITTED, ABORTED, IN_PROGRESS or UNKNOWN.
	Outcome string
	Reason  string
	// DecisionIndex is the log index of the decision; 0 while undecided.
	DecisionIndex uint64
}

// ToOutcomeResult checks an answer about txnID; an unset or unknown outcome is a protocol error, never read as a guess.
func ToOutcomeResult(txnID string, a *pb.TxnOutcome) (OutcomeResult, error) {
	if a.GetTxnId() != "" && a.GetTxnId() != txnID {
		return OutcomeResult{}, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("asked about transaction %s, the cluster answered about %s", txnID, a.GetTxnId())}
	}
	var o string
	switch a.GetOutcome() {
	case pb.Outcome_OUTCOME_COMMITTED:
		o = Committed
	case pb.Outcome_OUTCOME_ABORTED:
		o = Aborted
	case pb.Outcome_OUTCOME_IN_PROGRESS:
		o = InProgress
	case pb.Outcome_OUTCOME_UNKNOWN:
		o = Unknown
	default:
		return OutcomeResult{}, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("the cluster answered outcome %d", a.GetOutcome())}
	}
	return OutcomeResult{TxnID: txnID, Outcome: o, Reason: a.GetReason(), DecisionIndex: a.GetDecisionIndex()}, nil
}

// EncodePayload: []byte as it is, a string as UTF-8, nil as empty, anything else as JSON (as the TypeScript SDK).
func EncodePayload(payload any) ([]byte, error) {
	switch p := payload.(type) {
	case nil:
		return nil, nil
	case []byte:
		return p, nil
	case string:
		return []byte(p), nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, invalidArgument("the payload cannot be encoded as JSON: %v", err)
	}
	return b, nil
}

// Client is a client of one Verdict cluster; safe for concurrent use.
type Client struct {
	Conn *Connection
}

// New makes a client of the nodes at endpoints (host:port); one reachable node is enough.
func New(endpoints []string, o Options) (*Client, error) {
	c, err := NewConnection(endpoints, o)
	if err != nil {
		return nil, err
	}
	return &Client{Conn: c}, nil
}

// Close closes the client's channels.
func (c *Client) Close() error { return c.Conn.Close() }

// TxnOptions: TimeoutMs is the transaction's deadline budget (0: the
// cluster's default); ParallelCommit nil means the cluster's default.
type TxnOptions struct {
	TxnID          string
	TimeoutMs      uint64
	ParallelCommit *bool
}

// Transaction is a new transaction without a round trip: the cluster begins it when its first Commit arrives.
func (c *Client) Transaction(o TxnOptions) (*Transaction, error) {
	id := o.TxnID
	if id == "" {
		id = NewTxnID()
	}
	if err := CheckTxnID(id); err != nil {
		return nil, err
	}
	return newTransaction(c.Conn, id, o, false), nil
}

// Begin begins a transaction on the cluster (one round trip); prefer Transaction unless the deadline is needed.
func (c *Client) Begin(ctx context.Context, o TxnOptions) (*Transaction, error) {
	id := o.TxnID
	if id == "" {
		id = NewTxnID()
	}
	if err := CheckTxnID(id); err != nil {
		return nil, err
	}
	r := &pb.BeginResponse{}
	if err := c.Conn.Call(ctx, "Begin", &pb.BeginRequest{TxnId: id, TimeoutMs: o.TimeoutMs}, r, CallOptions{}); err != nil {
		return nil, err
	}
	if r.TxnId != "" && r.TxnId != id {
		return nil, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("began %s, the cluster answered %s", id, r.TxnId)}
	}
	t := newTransaction(c.Conn, id, o, true)
	t.DeadlineAtMs, t.LeaderID = r.DeadlineAtMs, r.LeaderId
	return t, nil
}

// Outcome is what the cluster's applied state says about txnID (R1).
func (c *Client) Outcome(ctx context.Context, txnID string) (OutcomeResult, error) {
	return c.outcome(ctx, txnID, "", CallOptions{})
}

// OutcomeAsParticipant asks as a participant in doubt: an undecided transaction is aborted first (R3).
func (c *Client) OutcomeAsParticipant(ctx context.Context, txnID, participantID string, o CallOptions) (OutcomeResult, error) {
	return c.outcome(ctx, txnID, participantID, o)
}

func (c *Client) outcome(ctx context.Context, txnID, participantID string, o CallOptions) (OutcomeResult, error) {
	if err := CheckTxnID(txnID); err != nil {
		return OutcomeResult{}, err
	}
	a := &pb.TxnOutcome{}
	if err := c.Conn.Call(ctx, "GetOutcome", &pb.OutcomeRequest{TxnId: txnID, ParticipantId: participantID}, a, o); err != nil {
		return OutcomeResult{}, err
	}
	return ToOutcomeResult(txnID, a)
}

// Abort aborts a transaction by id; it answers the outcome, COMMITTED if the abort came too late.
func (c *Client) Abort(ctx context.Context, txnID, reason string) (OutcomeResult, error) {
	if err := CheckTxnID(txnID); err != nil {
		return OutcomeResult{}, err
	}
	a := &pb.TxnOutcome{}
	if err := c.Conn.Call(ctx, "Abort", &pb.AbortRequest{TxnId: txnID, Reason: reason}, a, CallOptions{}); err != nil {
		return OutcomeResult{}, err
	}
	return ToOutcomeResult(txnID, a)
}

// Status is the answering node's view of the cluster.
func (c *Client) Status(ctx context.Context) (*pb.ClusterStatusResponse, error) {
	r := &pb.ClusterStatusResponse{}
	if err := c.Conn.Call(ctx, "ClusterStatus", &pb.ClusterStatusRequest{}, r, CallOptions{}); err != nil {
		return nil, err
	}
	return r, nil
}

// ClusterID is the cluster's id, asked once; from then on a node's certificate must name it too.
func (c *Client) ClusterID(ctx context.Context) (string, error) {
	if id := c.Conn.ClusterID(); id != "" {
		return id, nil
	}
	s, err := c.Status(ctx)
	if err != nil {
		return "", err
	}
	if s.ClusterId == "" {
		return "", &Error{Code: "INTERNAL", Reason: "the cluster answered ClusterStatus without its id"}
	}
	c.Conn.setClusterID(s.ClusterId)
	return s.ClusterId, nil
}

// RegisterParticipant registers a participant; serves lists the optional Participant methods it serves ("Status", "Exchange").
func (c *Client) RegisterParticipant(ctx context.Context, participantID, endpoint, resourceKind string, serves []string, o CallOptions) (*pb.ParticipantInfo, error) {
	if err := CheckParticipantID(participantID); err != nil {
		return nil, err
	}
	cid, err := c.ClusterID(ctx)
	if err != nil {
		return nil, err
	}
	req := &pb.RegisterParticipantRequest{ClusterId: cid, ParticipantId: participantID, Endpoint: endpoint, ResourceKind: resourceKind, Serves: serves}
	r := &pb.RegisterParticipantResponse{}
	if err := c.Conn.Call(ctx, "RegisterParticipant", req, r, o); err != nil {
		return nil, err
	}
	if r.Participant == nil {
		return nil, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("registering %s: the cluster answered without the participant", participantID)}
	}
	return r.Participant, nil
}

// Participants lists the registered participants; withActivity adds the leader's view of each.
func (c *Client) Participants(ctx context.Context, withActivity bool) ([]*pb.ParticipantInfo, error) {
	r := &pb.ListParticipantsResponse{}
	if err := c.Conn.Call(ctx, "ListParticipants", &pb.ListParticipantsRequest{WithActivity: withActivity}, r, CallOptions{}); err != nil {
		return nil, err
	}
	return r.Participants, nil
}

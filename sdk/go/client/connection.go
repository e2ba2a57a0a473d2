package client

// One application's connection to a Verdict cluster: finds the leader,
// follows its redirects and retries what may be retried; the same policy as
// the TypeScript SDK (src/client/connection.ts, src/transport/leader-finder.ts)
// and the Python SDK. Writes go to the leader; a follower answers UNAVAILABLE
// with verdict-reason NOT_LEADER and the leader's address in
// verdict-leader-address, and the next attempt goes there at once (at most
// MaxRedirects hints per round). A node that is down, slow or leaderless is
// skipped for the next address; after a full round the call pauses (capped
// exponential, jittered). Everything is bounded by the call's deadline.
// Resending is safe only because every Coordinator RPC is idempotent by
// transaction id (R7); which attempts certainly did nothing is read from
// verdict-reason, never from message text.

import (
	"context"
	"fmt"
	"math/rand"
	"regexp"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "verdict/sdk/go/pb/coordinatorpb"
)

const (
	DefaultCallTimeout    = 10 * time.Second
	DefaultAttemptTimeout = 5 * time.Second
	DefaultMaxRedirects   = 3
	// LearnedAddressesMax bounds the addresses hints can add, so a misbehaving server cannot grow the list for ever.
	LearnedAddressesMax = 64
	// metadataCharsMax: metadata values come from the network; longer ones are ignored.
	metadataCharsMax = 256

	StatusReasonKey    = "verdict-reason"
	LeaderIDKey        = "verdict-leader-id"
	LeaderAddressKey   = "verdict-leader-address"
	RecordedOutcomeKey = "verdict-outcome"

	// CoordinatorService and SagasService are the method paths' prefixes of the two services every node serves.
	CoordinatorService = "/verdict.coordinator.Coordinator/"
	SagasService       = "/verdict.saga.Sagas/"
)

// neverConnected: the transport's own words for an attempt that made no
// connection, or whose server failed the TLS check (not a node, R8): the
// request never left.
var neverConnected = regexp.MustCompile(`(?i)connection refused|error while dialing|no connection established|connection closed before server preface|authentication handshake failed`)

// Options configure a Connection (and so a Client).
type Options struct {
	// TLS: the cluster CA and this side's certificate. Nil means plaintext, which needs Insecure.
	TLS *TLSFiles
	// Insecure: plaintext, chosen knowingly.
	Insecure bool
	// ClusterID: under TLS, the cluster whose nodes' certificates are accepted (OU); learned from the cluster when "".
	ClusterID      string
	CallTimeout    time.Duration
	AttemptTimeout time.Duration
	MaxRedirects   int
	Backoff        *Backoff
	// Random returns a number in [0, 1) for the jitter; math/rand when nil.
	Random func() float64
}

// Connection sends Coordinator RPCs with leader following and the SDK's retry rule; safe for concurrent use.
type Connection struct {
	mu        sync.Mutex
	addresses []string
	// leaders holds, per decision group, the node tried first: the last that
	// answered as its leader or that a follower named. One group until a
	// ClusterStatus answer says more (docs/architecture.md, "Leaders spread,
	// clients route"); at G = 1 it is the one leader hint it always was.
	leaders     []string
	groupsKnown bool
	conns       map[string]*grpc.ClientConn
	closed      bool
	clusterID   string
	creds       credentials.TransportCredentials

	CallTimeout    time.Duration
	AttemptTimeout time.Duration
	MaxRedirects   int
	Backoff        Backoff
	random         func() float64
}

// NewConnection checks the addresses and the TLS files; it dials nothing yet.
func NewConnection(endpoints []string, o Options) (*Connection, error) {
	if len(endpoints) == 0 {
		return nil, invalidArgument("a connection needs at least one node address (host:port)")
	}
	c := &Connection{conns: map[string]*grpc.ClientConn{}, clusterID: o.ClusterID, leaders: []string{""}}
	for _, a := range endpoints {
		if !isAddress(a) {
			return nil, invalidArgument("%q is not a host:port address", a)
		}
		if !contains(c.addresses, a) && len(c.addresses) < LearnedAddressesMax {
			c.addresses = append(c.addresses, a)
		}
	}
	if o.TLS != nil {
		cfg, err := nodeTLSConfig(*o.TLS, c.ClusterID)
		if err != nil {
			return nil, err
		}
		c.creds = credentials.NewTLS(cfg)
	} else if !o.Insecure {
		return nil, invalidArgument("no TLS: give Options.TLS (ca, cert, key), or Insecure to talk plaintext to a cluster that serves it (docs/security.md)")
	}
	c.CallTimeout, c.AttemptTimeout, c.MaxRedirects, c.Backoff = DefaultCallTimeout, DefaultAttemptTimeout, DefaultMaxRedirects, DefaultBackoff
	if o.CallTimeout > 0 {
		c.CallTimeout = o.CallTimeout
	}
	if o.AttemptTimeout > 0 {
		c.AttemptTimeout = o.AttemptTimeout
	}
	if o.MaxRedirects > 0 {
		c.MaxRedirects = o.MaxRedirects
	}
	if o.Backoff != nil {
		c.Backoff = *o.Backoff
	}
	c.random = o.Random
	if c.random == nil {
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		var rmu sync.Mutex
		c.random = func() float64 { rmu.Lock(); defer rmu.Unlock(); return r.Float64() }
	}
	return c, nil
}

// ClusterID is the cluster whose nodes are accepted under TLS ("" until known).
func (c *Connection) ClusterID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterID
}

func (c *Connection) setClusterID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clusterID = id
}

// learn adds a hinted address if it has the form host:port and there is room; true when it is known.
func (c *Connection) learn(a string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if contains(c.addresses, a) {
		return true
	}
	if !isAddress(a) || len(c.addresses) >= LearnedAddressesMax {
		return false
	}
	c.addresses = append(c.addresses, a)
	return true
}

func (c *Connection) conn(address string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &Error{Code: "CANCELLED", Reason: "the connection is closed"}
	}
	if cc := c.conns[address]; cc != nil {
		return cc, nil
	}
	opt := grpc.WithInsecure()
	if c.creds != nil {
		opt = grpc.WithTransportCredentials(c.creds)
	}
	cc, err := grpc.Dial(address, opt)
	if err != nil {
		return nil, &Error{Code: "INVALID_ARGUMENT", Reason: fmt.Sprintf("%s: %v", address, err), Address: address}
	}
	c.conns[address] = cc
	return cc, nil
}

// search is one call's walk over the addresses for one group's leader (src/transport/leader-finder.ts, LeaderSearch).
type search struct {
	c         *Connection
	group     int
	round     int
	tried     map[string]bool
	redirects int
	pending   string
}

func (c *Connection) newSearch(group int) *search {
	s := &search{c: c, group: group, round: 1, tried: map[string]bool{}}
	s.pending = c.startAddress(group)
	return s
}

func (c *Connection) startAddress(group int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if group < len(c.leaders) && c.leaders[group] != "" {
		return c.leaders[group]
	}
	return c.addresses[0]
}

// Groups is the number of decision groups the connection routes by: 1 until a ClusterStatus answer says more.
func (c *Connection) Groups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.leaders)
}

// GroupsKnown reports whether a ClusterStatus answer said how many groups the cluster has.
func (c *Connection) GroupsKnown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groupsKnown
}

// GroupOf is the group that decides id as the connection routes now.
func (c *Connection) GroupOf(id string) int {
	return GroupOf(id, c.Groups())
}

// LearnGroups takes G and each group's leader from a ClusterStatus answer; at
// G = 1 (or 0, a cluster before groups) nothing else changes. A count out of
// range is ignored (it came from the network).
func (c *Connection) LearnGroups(st *pb.ClusterStatusResponse) {
	count := int(st.GetGroupCount())
	if count == 0 {
		count = 1
	}
	if count > GroupsMax {
		return
	}
	c.mu.Lock()
	c.groupsKnown = true
	if count != len(c.leaders) {
		next := make([]string, count)
		copy(next, c.leaders)
		c.leaders = next
	}
	c.mu.Unlock()
	if count == 1 {
		return
	}
	for _, g := range st.GetGroups() {
		if int(g.GetGroup()) < count && g.GetLeaderAddress() != "" && c.learn(g.GetLeaderAddress()) {
			c.mu.Lock()
			if int(g.GetGroup()) < len(c.leaders) {
				c.leaders[g.GetGroup()] = g.GetLeaderAddress()
			}
			c.mu.Unlock()
		}
	}
}

// stale reports whether a refusal naming group text (verdict-group) shows the
// routing stale: a group while routing as one unlearnt group, or one past G.
func (c *Connection) stale(text string) bool {
	g := parseGroup(text)
	if g < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.groupsKnown {
		return g > 0
	}
	return g >= len(c.leaders)
}

// Connect asks the cluster's status once and routes by it from then on (G
// and each group's leader). Optional: without it the connection learns them
// at the first refusal that names a group; at G = 1 it changes nothing.
func (c *Connection) Connect(ctx context.Context) (*pb.ClusterStatusResponse, error) {
	st := &pb.ClusterStatusResponse{}
	if err := c.Call(ctx, "ClusterStatus", &pb.ClusterStatusRequest{}, st, CallOptions{}); err != nil {
		return nil, err
	}
	return st, nil
}

// routedID is the id whose group decides req (a transaction's, a saga's, a
// lease's; GetOutcomes, SagaStates: the first, the caller asks one group at a time), or
// "" for a call about no one id, which goes to group 0's leader.
func routedID(method string, req proto.Message) string {
	field := ""
	switch method {
	case "Begin", "Commit", "Abort", "GetOutcome", "ResolveTransaction", "ReportHeuristic", "ListTransactions":
		field = "txn_id"
	case "AcquireLease", "RenewLease", "ReleaseLease":
		field = "name"
	case "StartSaga", "SagaStatus", "RetrySaga", "ResolveSaga":
		field = "saga_id"
	case "GetOutcomes":
		if r, ok := req.(*pb.OutcomesRequest); ok && len(r.GetTxnIds()) > 0 {
			return r.GetTxnIds()[0]
		}
		return ""
	case "SagaStates":
		m := req.ProtoReflect()
		fd := m.Descriptor().Fields().ByName("saga_ids")
		if fd == nil || !fd.IsList() || fd.Kind() != protoreflect.StringKind || m.Get(fd).List().Len() == 0 {
			return ""
		}
		return m.Get(fd).List().Get(0).String()
	default:
		return ""
	}
	m := req.ProtoReflect()
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(field))
	if fd == nil || fd.Kind() != protoreflect.StringKind {
		return ""
	}
	return m.Get(fd).String()
}

func (s *search) next() string {
	a := s.pending
	if a != "" {
		s.tried[a] = true
	}
	return a
}

func (s *search) answered(address string) {
	s.c.setLeader(s.group, address)
	s.pending = ""
}

func (c *Connection) setLeader(group int, address string) {
	c.mu.Lock()
	if group < len(c.leaders) {
		c.leaders[group] = address
	}
	c.mu.Unlock()
}

func (s *search) failed(address, hint string) {
	s.c.mu.Lock()
	if s.group < len(s.c.leaders) && s.c.leaders[s.group] == address {
		s.c.leaders[s.group] = ""
	}
	s.c.mu.Unlock()
	if hint != "" && hint != address && s.redirects < s.c.MaxRedirects && s.c.learn(hint) {
		s.redirects++
		s.pending = hint
		return
	}
	s.pending = ""
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for _, a := range s.c.addresses {
		if !s.tried[a] {
			s.pending = a
			return
		}
	}
}

func (s *search) nextRound() {
	s.round++
	s.tried = map[string]bool{}
	s.redirects = 0
	s.pending = s.c.startAddress(s.group)
}

// CallOptions tune one Call.
type CallOptions struct {
	CallTimeout    time.Duration
	AttemptTimeout time.Duration
	// Service is the method's service: CoordinatorService when "", or SagasService.
	Service string
	// NextRequest hears every retried failure (its classification) and gives the next attempt's request.
	NextRequest func(Failure) proto.Message
	// Group, for a call about no one id, sends it to that decision group's
	// leader with the group in verdict-group metadata, so the node answers
	// for that group alone (a listing: Client.Transactions at G > 1). Nil:
	// the id's group, or group 0 for a call about no one id.
	Group *int
}

func trailer(md metadata.MD, key string) string {
	for _, v := range md.Get(key) {
		if v != "" && len(v) <= metadataCharsMax {
			return v
		}
	}
	return ""
}

func refusalDetails(md metadata.MD) RefusalDetails {
	d := RefusalDetails{StatusReason: trailer(md, StatusReasonKey), LeaderID: trailer(md, LeaderIDKey), LeaderAddress: trailer(md, LeaderAddressKey)}
	if r := trailer(md, RecordedOutcomeKey); r == "COMMITTED" || r == "ABORTED" {
		d.RecordedOutcome = r
	}
	return d
}

// codeName is the gRPC code's name as the other SDKs spell it (INVALID_ARGUMENT, ...).
func codeName(code codes.Code) string {
	names := map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
		codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
		codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED", codes.FailedPrecondition: "FAILED_PRECONDITION",
		codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL",
		codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
	}
	if n, ok := names[code]; ok {
		return n
	}
	return "UNKNOWN"
}

// Call sends one Coordinator RPC (method: "Commit", "GetOutcome", ...), or
// one of CallOptions.Service (SagasService: "StartSaga", ...),
// following redirects and retrying what the rule allows until the call's
// deadline. Any other error is the cluster's answer and returns an *Error at
// once; running out of time returns an *Error with Exhausted set.
func (c *Connection) Call(ctx context.Context, method string, req, resp proto.Message, o CallOptions) error {
	callTimeout, attemptTimeout := c.CallTimeout, c.AttemptTimeout
	if o.CallTimeout > 0 {
		callTimeout = o.CallTimeout
	}
	if o.AttemptTimeout > 0 {
		attemptTimeout = o.AttemptTimeout
	}
	deadline := time.Now().Add(callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	service := o.Service
	if service == "" {
		service = CoordinatorService
	}
	last, lastCode := "", "UNAVAILABLE"
	id := routedID(method, req)
	group := 0
	if o.Group != nil {
		group = *o.Group
		if group < 0 || group >= GroupsMax {
			return &Error{Code: "INVALID_ARGUMENT", Reason: fmt.Sprintf("a call's group must be from 0 to %d (got %d)", GroupsMax-1, group)}
		}
		ctx = metadata.AppendToOutgoingContext(ctx, GroupKey, strconv.Itoa(group))
	} else if id != "" {
		group = c.GroupOf(id)
	}
	s := c.newSearch(group)
	asked := false
	for {
		for address := s.next(); address != ""; address = s.next() {
			remaining := time.Until(deadline)
			if remaining <= 0 {
				break
			}
			clipped := remaining < attemptTimeout
			cc, err := c.conn(address)
			if err != nil {
				return err
			}
			timeout := attemptTimeout
			if clipped {
				timeout = remaining
			}
			actx, cancel := context.WithTimeout(ctx, timeout)
			var md metadata.MD
			err = cc.Invoke(actx, service+method, req, resp, grpc.Trailer(&md))
			cancel()
			if err == nil {
				s.answered(address)
				if st, ok := resp.(*pb.ClusterStatusResponse); ok && service == CoordinatorService {
					c.LearnGroups(st)
				}
				return nil
			}
			if ctx.Err() != nil {
				return &Error{Code: "CANCELLED", Reason: ctx.Err().Error(), Address: address}
			}
			st, _ := status.FromError(err)
			code := codeName(st.Code())
			reason := trailer(md, StatusReasonKey)
			text := st.Message()
			failure := ClassifyFailure(code, reason, neverConnected.MatchString(text))
			if !Retryable(failure) {
				return &Error{Code: code, Reason: text, Address: address, Details: refusalDetails(md)}
			}
			if o.NextRequest != nil {
				req = o.NextRequest(failure)
			}
			// An attempt cut short by the call's own deadline says nothing about the node.
			if !(clipped && code == "DEADLINE_EXCEEDED" && last != "") {
				last, lastCode = fmt.Sprintf("%s: %s %s", address, code, text), code
			}
			hint := ""
			if reason == "NOT_LEADER" {
				hint = trailer(md, LeaderAddressKey)
			}
			if hint != "" && id != "" && !asked && c.stale(trailer(md, GroupKey)) {
				// A refusal naming a group this connection does not route by: learn the groups from that node, then go to the id's group.
				asked = true
				c.learnGroupsAt(ctx, cc, minDuration(attemptTimeout, time.Until(deadline)))
				if g := c.GroupOf(id); g != s.group {
					if c.learn(hint) {
						c.setLeader(g, hint)
					}
					s = c.newSearch(g)
					continue
				}
			}
			s.failed(address, hint)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			if last == "" {
				last = "no node was tried"
			}
			return &Error{Code: lastCode, Reason: fmt.Sprintf("no node answered %s in time; last: %s", method, last), Exhausted: true}
		}
		pause := time.Duration(PauseMs(s.round-1, c.Backoff, c.random()) * float64(time.Millisecond))
		if pause > remaining {
			pause = remaining
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return &Error{Code: "CANCELLED", Reason: ctx.Err().Error()}
		case <-t.C:
		}
		s.nextRound()
	}
}

// learnGroupsAt asks one node the cluster's status; a failure leaves routing as it was.
func (c *Connection) learnGroupsAt(ctx context.Context, cc *grpc.ClientConn, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st := &pb.ClusterStatusResponse{}
	if err := cc.Invoke(actx, CoordinatorService+"ClusterStatus", &pb.ClusterStatusRequest{}, st); err == nil {
		c.LearnGroups(st)
	}
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// Close closes every channel; calls after it fail with CANCELLED.
func (c *Connection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for a, cc := range c.conns {
		if err := cc.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.conns, a)
	}
	return first
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

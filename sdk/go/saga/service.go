// Package saga is the Go SDK's saga step service (docs/sagas.md): it serves
// verdict.saga.SagaStep (proto/saga.proto) for named step handlers, with the
// inbox (inbox.go) that makes each step's effect happen once under the
// orchestrator's at-least-once calls, and registers with the cluster like a
// participant (resource kind saga-memory). With Config.Postgres the inbox is
// a table of the service's own database, written in each step's local
// transaction with its effect (postgres.go; resource kind saga-postgres). The Go twin of the TypeScript
// step service (src/saga/step-service.ts) and the Python SDK's
// (sdk/python/verdict/saga.py). Starting a saga and asking its status are
// the client's (client.StartSaga, client.SagaStatus, client.WaitSaga).
package saga

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"verdict/sdk/go/client"
	"verdict/sdk/go/participant"
	spb "verdict/sdk/go/pb/sagapb"
)

const (
	// ResourceKind is what a step service registers as; PgResourceKind with its inbox in PostgreSQL.
	ResourceKind   = "saga-memory"
	PgResourceKind = "saga-postgres"
	// endConfirmationsMax: End calls being confirmed with the cluster at once; beyond, RESOURCE_EXHAUSTED (the orchestrator retries).
	endConfirmationsMax = 64
	// requestBytesMax: a call larger than this is refused by the server (the cluster's own bound on a saga's text is 256 KiB).
	requestBytesMax = 4 * 1024 * 1024
)

// Step is one named step: its action and its compensation.
type Step struct {
	Action     Handler
	Compensate Handler
}

// PgSteps is a step service on PostgreSQL: its inbox is a table of the
// database at DSN (lib/pq), and each step runs in the inbox's transaction.
type PgSteps struct {
	DSN string
	// PoolMax bounds the connections, so the calls handled at once (8 when 0).
	PoolMax int
	Steps   map[string]PgStep
}

// Config is what a step service needs. Endpoint is the address the nodes
// dial (host:port; port 0 takes a free port); Listen is what the server
// binds (Endpoint when ""). Steps (with the inbox in DataDir) or Postgres
// (with the inbox in that database) name the steps. Apply turns a recorded effect into the
// service's state change: on each new record, and in order over every
// record at start. TLS holds the cluster CA and this service's certificate
// (CN=<service id>, OU=<cluster id>); it then serves mutual TLS and takes
// calls only from the nodes of its cluster (R8). Plaintext only with Insecure.
type Config struct {
	ServiceID string
	ClusterID string
	Nodes     []string
	DataDir   string
	Endpoint  string
	Listen    string
	Steps     map[string]Step
	Postgres  *PgSteps
	Apply     func(Record)
	TLS       *client.TLSFiles
	Insecure  bool
	Log       participant.Log
	// RegisterTimeout bounds Start's registration (60 s when 0).
	RegisterTimeout time.Duration
}

// Service is a running step service: the gRPC server, the inbox, registration with the cluster.
type Service struct {
	// Inbox is the file inbox; PgInbox the PostgreSQL one (the other is nil).
	Inbox    *Inbox
	PgInbox  *PgInbox
	Client   *client.Client
	Endpoint string

	cfg        Config
	server     *grpc.Server
	listener   net.Listener
	done       sync.WaitGroup
	confirming chan struct{}
	stopOnce   sync.Once
	// statesUnsupportedUntil: until then the ends of an EndSagas call are confirmed with SagaStatus per saga (the
	// cluster answered SagaStates UNIMPLEMENTED).
	statesMu               sync.Mutex
	statesUnsupportedUntil time.Time
}

// Start opens the inbox (applying its effects), learns the cluster id if not
// given, serves and registers (retried until a leader takes it). On an error
// everything it opened is closed again.
func Start(ctx context.Context, cfg Config) (s *Service, err error) {
	if err := client.CheckParticipantID(cfg.ServiceID); err != nil {
		return nil, err
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = participant.JSONLog
	}
	if cfg.Listen == "" {
		cfg.Listen = cfg.Endpoint
	}
	if cfg.RegisterTimeout <= 0 {
		cfg.RegisterTimeout = 60 * time.Second
	}
	c, err := client.New(cfg.Nodes, client.Options{TLS: cfg.TLS, Insecure: cfg.Insecure, ClusterID: cfg.ClusterID})
	if err != nil {
		return nil, err
	}
	s = &Service{Client: c, cfg: cfg, confirming: make(chan struct{}, endConfirmationsMax)}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if cfg.Postgres != nil {
		if s.PgInbox, err = openPg(ctx, *cfg.Postgres); err != nil {
			return s, err
		}
	} else if s.Inbox, err = OpenInbox(cfg.DataDir, cfg.Apply); err != nil {
		return s, err
	}
	if s.cfg.ClusterID == "" {
		if s.cfg.ClusterID, err = c.ClusterID(ctx); err != nil {
			return s, err
		}
	}
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(requestBytesMax)}
	if cfg.TLS != nil {
		pool, cert, err := cfg.TLS.Load()
		if err != nil {
			return s, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})))
	}
	s.server = grpc.NewServer(opts...)
	spb.RegisterSagaStepServer(s.server, &stepServer{s: s})
	if s.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
		return s, &client.Error{Code: "UNAVAILABLE", Reason: fmt.Sprintf("cannot listen on %s: %v", cfg.Listen, err)}
	}
	s.Endpoint = cfg.Endpoint
	if strings.HasSuffix(s.Endpoint, ":0") {
		s.Endpoint = fmt.Sprintf("%s:%d", strings.TrimSuffix(s.Endpoint, ":0"), s.listener.Addr().(*net.TCPAddr).Port)
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		_ = s.server.Serve(s.listener)
	}()
	if err := s.register(ctx); err != nil {
		return s, err
	}
	cfg.Log("step-service-started", map[string]any{"service_id": cfg.ServiceID, "endpoint": s.Endpoint})
	return s, nil
}

func checkConfig(cfg Config) error {
	if cfg.Endpoint == "" || (cfg.Postgres == nil) == (len(cfg.Steps) == 0) {
		return &client.Error{Code: "INVALID_ARGUMENT", Reason: "a step service needs an Endpoint, and Steps (with a DataDir) or Postgres"}
	}
	if cfg.Postgres == nil && cfg.DataDir == "" {
		return &client.Error{Code: "INVALID_ARGUMENT", Reason: "a step service with Steps keeps its inbox in a DataDir: give one"}
	}
	missing := func(name string) error {
		return &client.Error{Code: "INVALID_ARGUMENT", Reason: fmt.Sprintf("step %q needs an Action and a Compensate handler", name)}
	}
	for name, st := range cfg.Steps {
		if st.Action == nil || st.Compensate == nil {
			return missing(name)
		}
	}
	if cfg.Postgres != nil {
		if cfg.Postgres.DSN == "" || len(cfg.Postgres.Steps) == 0 {
			return &client.Error{Code: "INVALID_ARGUMENT", Reason: "a PostgreSQL step service needs Postgres.DSN and Postgres.Steps"}
		}
		for name, st := range cfg.Postgres.Steps {
			if st.Action == nil || st.Compensate == nil {
				return missing(name)
			}
		}
	}
	return nil
}

func openPg(ctx context.Context, p PgSteps) (*PgInbox, error) {
	db, err := sql.Open("postgres", p.DSN)
	if err != nil {
		return nil, err
	}
	if p.PoolMax <= 0 {
		p.PoolMax = 8
	}
	db.SetMaxOpenConns(p.PoolMax)
	in, err := OpenPgInbox(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return in, nil
}

func (s *Service) register(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.RegisterTimeout)
	kind := ResourceKind
	if s.PgInbox != nil {
		kind = PgResourceKind
	}
	for {
		_, err := s.Client.RegisterParticipant(ctx, s.cfg.ServiceID, s.Endpoint, kind, nil, client.CallOptions{CallTimeout: time.Until(deadline)})
		if err == nil {
			return nil
		}
		var ve *client.Error
		if !errors.As(err, &ve) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		switch ve.Code {
		case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAUTHENTICATED", "CANCELLED":
			return err
		}
	}
}

// Stop stops serving (calls in progress finish), closes the inbox and the client.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		if s.server != nil {
			s.server.GracefulStop()
		}
		s.done.Wait()
		if s.Inbox != nil {
			_ = s.Inbox.Close()
		}
		if s.PgInbox != nil {
			_ = s.PgInbox.DB.Close()
		}
		_ = s.Client.Close()
	})
}

// stepServer serves verdict.saga.SagaStep over a Service.
type stepServer struct {
	spb.UnimplementedSagaStepServer
	s *Service
}

// guard: under TLS, calls are taken only from a certificate with the node mark of this cluster (R8).
func (g *stepServer) guard(ctx context.Context) error {
	if g.s.cfg.TLS == nil {
		return nil
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "the caller is not known, so it cannot be shown to be a node")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return status.Error(codes.PermissionDenied, "the caller showed no certificate, so it cannot be shown to be a node")
	}
	if problem := participant.NodeCallerProblem(ti.State.PeerCertificates[0], g.s.cfg.ClusterID); problem != "" {
		return status.Error(codes.PermissionDenied, fmt.Sprintf("step service %s takes calls only from a node of its cluster: %s", g.s.cfg.ServiceID, problem))
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (g *stepServer) checkSaga(clusterID, sagaID string) error {
	if clusterID != g.s.cfg.ClusterID {
		return status.Errorf(codes.FailedPrecondition, "the call is for cluster %q, this step service is in cluster %q", clip(clusterID, 64), g.s.cfg.ClusterID)
	}
	if client.CheckSagaID(sagaID) != nil {
		return status.Errorf(codes.InvalidArgument, "saga id %q is not a saga id", clip(sagaID, 40))
	}
	return nil
}

func (g *stepServer) serve(ctx context.Context, kind string, r *spb.StepRequest) (*spb.StepResult, error) {
	if err := g.guard(ctx); err != nil {
		return nil, err
	}
	if err := g.checkSaga(r.ClusterId, r.SagaId); err != nil {
		return nil, err
	}
	if r.Step >= client.SagaStepsMax {
		return nil, status.Errorf(codes.InvalidArgument, "saga %s: step %d is beyond the limit of %d steps", r.SagaId, r.Step, client.SagaStepsMax)
	}
	key := StepKey(r.SagaId, r.Step, kind)
	if r.Key != key {
		return nil, status.Errorf(codes.InvalidArgument, "saga %s step %d: key %q is not %s", r.SagaId, r.Step, clip(r.Key, 80), key)
	}
	req := Request{SagaID: r.SagaId, Step: r.Step, Kind: kind, Key: key, Name: r.Name, Input: r.Input, Outputs: r.Outputs, Attempt: r.Attempt}
	var a Answer
	var err error
	if pg := g.s.cfg.Postgres; pg != nil {
		st, ok := pg.Steps[r.Name]
		if !ok {
			return nil, g.noHandler(r)
		}
		h := st.Action
		if kind == Compensate {
			h = st.Compensate
		}
		a, err = g.s.PgInbox.Handle(ctx, req, h)
	} else {
		st, ok := g.s.cfg.Steps[r.Name]
		if !ok {
			return nil, g.noHandler(r)
		}
		h := st.Action
		if kind == Compensate {
			h = st.Compensate
		}
		a, err = g.s.Inbox.Handle(req, h)
	}
	if err != nil {
		g.s.cfg.Log("step-failed", map[string]any{"saga_id": r.SagaId, "step": r.Step, "kind": kind, "error": clip(err.Error(), 512)})
		return nil, status.Errorf(codes.Unavailable, "saga %s step %d %s: %s", r.SagaId, r.Step, kind, clip(err.Error(), 512))
	}
	g.s.cfg.Log("step-answered", map[string]any{"saga_id": r.SagaId, "step": r.Step, "kind": kind, "key": key, "done": a.Done})
	if a.Done {
		return &spb.StepResult{Status: spb.StepStatus_STEP_DONE, Output: a.Output, Reason: a.Reason}, nil
	}
	return &spb.StepResult{Status: spb.StepStatus_STEP_FAILED, Reason: a.Reason}, nil
}

func (g *stepServer) noHandler(r *spb.StepRequest) error {
	return status.Errorf(codes.Unimplemented, "saga %s step %d: step service %s has no handler named %q", r.SagaId, r.Step, g.s.cfg.ServiceID, clip(r.Name, 80))
}

func (g *stepServer) Execute(ctx context.Context, r *spb.StepRequest) (*spb.StepResult, error) {
	return g.serve(ctx, Action, r)
}

func (g *stepServer) Compensate(ctx context.Context, r *spb.StepRequest) (*spb.StepResult, error) {
	return g.serve(ctx, Compensate, r)
}

// End drops a saga's keys and refuses every later call of it, so an End
// for a saga still running would wedge it: its next step could never run
// here. The orchestrator sends End only once the saga's end is applied in
// the log, so the end is confirmed with the cluster first (SagaStatus);
// anything but finished or compensated is refused, and the orchestrator,
// which retries End until it is acknowledged, asks again. Without TLS this
// is what stops a caller that is not a node; with TLS only nodes get here.
func (g *stepServer) End(ctx context.Context, r *spb.SagaEndRequest) (*spb.SagaEndAck, error) {
	if err := g.guard(ctx); err != nil {
		return nil, err
	}
	if err := g.checkSaga(r.ClusterId, r.SagaId); err != nil {
		return nil, err
	}
	if g.s.Inbox != nil && g.s.Inbox.Ended(r.SagaId) {
		return &spb.SagaEndAck{}, nil
	}
	select {
	case g.s.confirming <- struct{}{}:
		defer func() { <-g.s.confirming }()
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "step service %s is confirming %d saga ends with the cluster; retry later", g.s.cfg.ServiceID, endConfirmationsMax)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	state := ""
	info, err := g.s.Client.SagaStatus(cctx, r.SagaId, 0)
	var ve *client.Error
	switch {
	case err == nil:
		state = info.State
	case errors.As(err, &ve) && ve.Code == "NOT_FOUND":
	default:
		return nil, status.Errorf(codes.Unavailable, "saga %s: its end could not be confirmed with the cluster (%s); retry", r.SagaId, clip(err.Error(), 256))
	}
	if state != client.SagaFinished && state != client.SagaCompensated {
		what := "unknown to the cluster"
		if state != "" {
			what = state + " on the cluster"
		}
		g.s.cfg.Log("end-refused", map[string]any{"saga_id": r.SagaId, "state": state})
		return nil, status.Errorf(codes.FailedPrecondition, "saga %s is %s: not ended, its keys stay", r.SagaId, what)
	}
	if g.s.PgInbox != nil {
		err = g.s.PgInbox.End(ctx, r.SagaId)
	} else {
		err = g.s.Inbox.End(r.SagaId)
	}
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "saga %s: %s", r.SagaId, clip(err.Error(), 256))
	}
	g.s.cfg.Log("saga-ended", map[string]any{"saga_id": r.SagaId, "state": state})
	return &spb.SagaEndAck{}, nil
}

// EndSagas is End for many sagas: the ends are confirmed with the cluster
// together (SagaStates, one call per decision group; SagaStatus per saga for
// a cluster from before it) and recorded in one write. A saga whose end is
// recorded here already is taken without asking; one the cluster does not
// have ended is left out of the answer, with the reason in Problem, and the
// orchestrator sends it again.
func (g *stepServer) EndSagas(ctx context.Context, r *spb.SagaEndsRequest) (*spb.SagaEndsAck, error) {
	if err := g.guard(ctx); err != nil {
		return nil, err
	}
	if len(r.SagaIds) > client.SagaIDsPerCallMax {
		return nil, status.Errorf(codes.InvalidArgument, "EndSagas takes at most %d saga ids; %d were sent", client.SagaIDsPerCallMax, len(r.SagaIds))
	}
	var ended, ask []string
	seen := map[string]bool{}
	for _, id := range r.SagaIds {
		if err := g.checkSaga(r.ClusterId, id); err != nil {
			return nil, err
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if g.s.Inbox != nil && g.s.Inbox.Ended(id) {
			ended = append(ended, id)
		} else {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return &spb.SagaEndsAck{Ended: ended}, nil
	}
	select {
	case g.s.confirming <- struct{}{}:
		defer func() { <-g.s.confirming }()
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "step service %s is confirming %d saga ends with the cluster; retry later", g.s.cfg.ServiceID, endConfirmationsMax)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	states, err := g.s.sagaStates(cctx, ask)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "the ends of %d sagas could not be confirmed with the cluster (%s); retry", len(ask), clip(err.Error(), 256))
	}
	var confirmed, refused []string
	for _, id := range ask {
		if st := states[id]; st == client.SagaFinished || st == client.SagaCompensated {
			confirmed = append(confirmed, id)
		} else {
			refused = append(refused, id)
		}
	}
	var problems []string
	if len(refused) > 0 {
		what := "unknown to the cluster"
		if st := states[refused[0]]; st != "" {
			what = st + " on the cluster"
		}
		g.s.cfg.Log("end-refused", map[string]any{"sagas": len(refused), "saga_id": refused[0], "state": states[refused[0]]})
		problems = append(problems, fmt.Sprintf("%d not ended, their keys stay (saga %s is %s)", len(refused), refused[0], what))
	}
	if g.s.PgInbox != nil {
		err = g.s.PgInbox.EndMany(ctx, confirmed)
	} else {
		err = g.s.Inbox.EndMany(confirmed)
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("the ends could not be recorded (%s)", clip(err.Error(), 256)))
	} else {
		ended = append(ended, confirmed...)
	}
	return &spb.SagaEndsAck{Ended: ended, Problem: strings.Join(problems, "; ")}, nil
}

// sagaStates is each saga's state as the cluster has it ("" for one it does not know).
func (s *Service) sagaStates(ctx context.Context, ids []string) (map[string]string, error) {
	s.statesMu.Lock()
	batched := time.Now().After(s.statesUnsupportedUntil)
	s.statesMu.Unlock()
	if batched {
		states, err := s.Client.SagaStates(ctx, ids)
		var ve *client.Error
		if err == nil || !errors.As(err, &ve) || ve.Code != "UNIMPLEMENTED" {
			return states, err
		}
		s.statesMu.Lock()
		s.statesUnsupportedUntil = time.Now().Add(sagaStatesReprobe)
		s.statesMu.Unlock()
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		info, err := s.Client.SagaStatus(ctx, id, 0)
		var ve *client.Error
		switch {
		case err == nil:
			out[id] = info.State
		case errors.As(err, &ve) && ve.Code == "NOT_FOUND":
			out[id] = ""
		default:
			return nil, err
		}
	}
	return out, nil
}

// sagaStatesReprobe: how long a cluster that answered SagaStates UNIMPLEMENTED is asked SagaStatus per saga instead.
const sagaStatesReprobe = 10 * time.Minute

package participant

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"verdict/sdk/go/client"
	cpb "verdict/sdk/go/pb/coordinatorpb"
	ppb "verdict/sdk/go/pb/participantpb"
)

const (
	// OutcomesBatchMax: in-doubt transactions asked about in one GetOutcomes at most (the protocol's bound).
	OutcomesBatchMax = 1024
	resolveTick      = 100 * time.Millisecond
)

// Serves are the optional Participant methods this runtime serves (RegisterParticipantRequest.serves).
var Serves = []string{"Exchange", "Status"}

// JSONLog writes one JSON line per event on stderr.
func JSONLog(event string, fields map[string]any) {
	line := map[string]any{"at_ms": time.Now().UnixMilli(), "event": event}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	fmt.Fprintln(os.Stderr, string(b))
}

// Config is what a participant needs. Endpoint is the address the nodes
// dial (host:port; port 0 takes a free port); Listen is what the server
// binds (Endpoint when ""). TLS holds the cluster CA and this participant's
// certificate (OU=<cluster id>, CN=<participant id>); the server then
// requires a client certificate with the node mark. Plaintext only with Insecure.
type Config struct {
	ParticipantID string
	Nodes         []string
	DataDir       string
	Resource      Resource
	Endpoint      string
	Listen        string
	ClusterID     string
	TLS           *client.TLSFiles
	Insecure      bool
	Log           Log
	InDoubtAfter  time.Duration
	// RegisterTimeout bounds Start's registration (60 s when 0).
	RegisterTimeout time.Duration
}

// Participant is a running participant: the gRPC server, registration and the in-doubt resolver.
type Participant struct {
	Engine   *Engine
	Client   *client.Client
	Endpoint string

	cfg      Config
	server   *grpc.Server
	listener net.Listener
	stop     chan struct{}
	done     sync.WaitGroup
	batched  bool
	// askedGroups: GetOutcomes' per-id UNAVAILABLE made the participant ask the cluster's groups (once).
	askedGroups bool
	stopOnce    sync.Once
}

// Start opens the journal, learns the cluster id if not given, serves,
// registers (retried until a leader takes it) and starts resolving what is
// in doubt. On an error everything it opened is closed again.
func Start(ctx context.Context, cfg Config) (p *Participant, err error) {
	if err := client.CheckParticipantID(cfg.ParticipantID); err != nil {
		return nil, err
	}
	if cfg.Resource == nil || cfg.DataDir == "" || cfg.Endpoint == "" {
		return nil, &client.Error{Code: "INVALID_ARGUMENT", Reason: "a participant needs a Resource, a DataDir and an Endpoint"}
	}
	if cfg.Log == nil {
		cfg.Log = JSONLog
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
	p = &Participant{Client: c, cfg: cfg, stop: make(chan struct{}), batched: true}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	j, err := OpenJournal(cfg.DataDir)
	if err != nil {
		return p, err
	}
	if p.Engine, err = NewEngine(cfg.ClusterID, cfg.ParticipantID, j, cfg.Resource, cfg.Log); err != nil {
		j.Close()
		return p, err
	}
	if cfg.InDoubtAfter > 0 {
		p.Engine.InDoubtAfter = cfg.InDoubtAfter
	}
	if p.Engine.ClusterID() == "" {
		id, err := c.ClusterID(ctx)
		if err != nil {
			return p, err
		}
		p.Engine.SetClusterID(id)
	}
	var opts []grpc.ServerOption
	if cfg.TLS != nil {
		pool, cert, err := cfg.TLS.Load()
		if err != nil {
			return p, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})))
	}
	p.server = grpc.NewServer(opts...)
	ppb.RegisterParticipantServer(p.server, &service{engine: p.Engine, nodeOnly: cfg.TLS != nil, closing: p.stop})
	if p.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
		return p, &client.Error{Code: "UNAVAILABLE", Reason: fmt.Sprintf("cannot listen on %s: %v", cfg.Listen, err)}
	}
	p.Endpoint = cfg.Endpoint
	if strings.HasSuffix(p.Endpoint, ":0") {
		// Listening on a port the system chose: the nodes dial that one.
		p.Endpoint = fmt.Sprintf("%s:%d", strings.TrimSuffix(p.Endpoint, ":0"), p.listener.Addr().(*net.TCPAddr).Port)
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		_ = p.server.Serve(p.listener)
	}()
	if err := p.register(ctx); err != nil {
		return p, err
	}
	p.done.Add(1)
	go p.resolveLoop()
	cfg.Log("started", map[string]any{"participant_id": cfg.ParticipantID, "endpoint": p.Endpoint, "in_doubt": p.Engine.InDoubt()})
	return p, nil
}

func (p *Participant) register(ctx context.Context) error {
	deadline := time.Now().Add(p.cfg.RegisterTimeout)
	for {
		_, err := p.Client.RegisterParticipant(ctx, p.cfg.ParticipantID, p.Endpoint, p.cfg.Resource.Kind(), Serves, client.CallOptions{CallTimeout: time.Until(deadline)})
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

func (p *Participant) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

func (p *Participant) resolveLoop() {
	defer p.done.Done()
	t := time.NewTicker(resolveTick)
	defer t.Stop()
	src, reports := p.cfg.Resource.(HeuristicSource)
	var nextReportAt time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if reports && !time.Now().Before(nextReportAt) {
			nextReportAt = time.Now().Add(HeuristicReportEvery)
			p.reportHeuristics(src)
		}
		due := p.Engine.due(time.Now())
		for len(due) > 0 && !p.stopped() {
			n := len(due)
			if n > OutcomesBatchMax {
				n = OutcomesBatchMax
			}
			batch := due[:n]
			due = due[n:]
			if len(batch) > 1 && p.batched {
				p.askMany(batch)
			} else {
				for _, t := range batch {
					p.ask(t)
				}
			}
		}
	}
}

func (p *Participant) askContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// ask: one GetOutcome for a transaction in doubt; COMMITTED or ABORTED is applied, anything else asked again later (R4).
func (p *Participant) ask(txnID string) {
	ctx, cancel := p.askContext()
	defer cancel()
	a := &cpb.TxnOutcome{}
	err := p.Client.Conn.Call(ctx, "GetOutcome", &cpb.OutcomeRequest{TxnId: txnID, ParticipantId: p.cfg.ParticipantID}, a, client.CallOptions{CallTimeout: 5 * time.Second, AttemptTimeout: 2 * time.Second})
	if err != nil {
		p.cfg.Log("in-doubt-ask-failed", map[string]any{"txn_id": txnID, "participant_id": p.cfg.ParticipantID, "error": err.Error()})
		p.Engine.asked(txnID, time.Now())
		return
	}
	if a.TxnId != "" && a.TxnId != txnID {
		p.Engine.asked(txnID, time.Now())
		return
	}
	p.apply(txnID, a.Outcome)
}

// askMany asks about many in-doubt transactions in one GetOutcomes; a cluster without it is asked one by one.
// In a cluster of several decision groups each group's leader answers for its own ids: one question per group.
func (p *Participant) askMany(txnIDs []string) {
	conn := p.Client.Conn
	if conn.Groups() == 1 {
		p.askGroup(txnIDs)
		return
	}
	var order []int
	byGroup := map[int][]string{}
	for _, t := range txnIDs {
		g := conn.GroupOf(t)
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], t)
	}
	for _, g := range order {
		if p.batched {
			p.askGroup(byGroup[g])
		} else {
			for _, t := range byGroup[g] {
				p.ask(t)
			}
		}
	}
}

// askGroup asks GetOutcomes for ids of one group (every id at G = 1), at that group's leader.
func (p *Participant) askGroup(txnIDs []string) {
	ctx, cancel := p.askContext()
	defer cancel()
	r := &cpb.OutcomesResponse{}
	err := p.Client.Conn.Call(ctx, "GetOutcomes", &cpb.OutcomesRequest{TxnIds: txnIDs, ParticipantId: p.cfg.ParticipantID}, r, client.CallOptions{CallTimeout: 5 * time.Second, AttemptTimeout: 2 * time.Second})
	var ve *client.Error
	if errors.As(err, &ve) && ve.Code == "UNIMPLEMENTED" {
		p.batched = false
		for _, t := range txnIDs {
			p.ask(t)
		}
		return
	}
	if err == nil && len(r.Answers) != len(txnIDs) {
		err = fmt.Errorf("asked about %d transactions, the cluster answered %d", len(txnIDs), len(r.Answers))
	}
	if err != nil {
		p.cfg.Log("in-doubt-ask-failed", map[string]any{"participant_id": p.cfg.ParticipantID, "txn_ids": len(txnIDs), "error": err.Error()})
		for _, t := range txnIDs {
			p.Engine.asked(t, time.Now())
		}
		return
	}
	if !p.askedGroups && !p.Client.Conn.GroupsKnown() {
		for _, a := range r.Answers {
			if a.Code == uint32(codes.Unavailable) {
				// A node of a cluster of several groups answers UNAVAILABLE for ids of groups it does not lead: learn the groups once.
				p.askedGroups = true
				_, _ = p.Client.Conn.Connect(ctx)
				break
			}
		}
	}
	for i, t := range txnIDs {
		a := r.Answers[i]
		if a.Code != 0 || a.Outcome == nil || (a.Outcome.TxnId != "" && a.Outcome.TxnId != t) {
			p.Engine.asked(t, time.Now())
		} else {
			p.apply(t, a.Outcome.Outcome)
		}
	}
}

// apply: the cluster's answer about a transaction in doubt; a decision is applied, anything else asked again later.
func (p *Participant) apply(txnID string, outcome cpb.Outcome) {
	if outcome != cpb.Outcome_OUTCOME_COMMITTED && outcome != cpb.Outcome_OUTCOME_ABORTED {
		p.Engine.asked(txnID, time.Now())
		return
	}
	err := p.Engine.Decide(p.Engine.ClusterID(), txnID, p.cfg.ParticipantID, outcome == cpb.Outcome_OUTCOME_COMMITTED, "in-doubt")
	var r *Refusal
	switch {
	case err == nil:
		p.Engine.forgetDoubt(txnID)
	case errors.As(err, &r):
		p.cfg.Log("in-doubt-conflict", map[string]any{"txn_id": txnID, "participant_id": p.cfg.ParticipantID, "reason": r.Details})
		p.Engine.forgetDoubt(txnID)
	default:
		// The resource failed to apply it (a lost connection): try again later.
		p.cfg.Log("in-doubt-apply-failed", map[string]any{"txn_id": txnID, "participant_id": p.cfg.ParticipantID, "error": clip(err.Error(), 512)})
		p.Engine.asked(txnID, time.Now())
	}
}

// Stop stops serving and resolving, and closes the client, the journal and the resource.
func (p *Participant) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		if p.server != nil {
			stopped := make(chan struct{})
			go func() { p.server.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(time.Second):
				p.server.Stop()
			}
		} else if p.listener != nil {
			p.listener.Close()
		}
		p.done.Wait()
		p.Client.Close()
		if p.Engine != nil {
			p.Engine.Journal.Close()
		}
		p.cfg.Resource.Close()
	})
}

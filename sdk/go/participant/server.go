package participant

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"verdict/sdk/go/client"
	ppb "verdict/sdk/go/pb/participantpb"
)

const (
	// ExchangeInFlightMax: requests of one Exchange stream worked on at once; the stream is read no further until one is answered.
	ExchangeInFlightMax = 256
	// AnswerBatchMax: answers sent in one AnswerBatch at most.
	AnswerBatchMax = 256
)

// service serves verdict.participant.Participant over an Engine.
type service struct {
	ppb.UnimplementedParticipantServer
	engine   *Engine
	nodeOnly bool
	// closing is closed when the participant stops cleanly (Participant.Stop): each Exchange stream
	// answers what it took, sends AnswerBatch{Closing: true} and ends. Nil: never.
	closing <-chan struct{}
}

// NodeCallerProblem says why a caller's certificate is not a node's of clusterID (the node mark and OU): "" when it is (R8).
func NodeCallerProblem(c *x509.Certificate, clusterID string) string {
	if p := client.NodeCertificateProblem(c, clusterID); p != "" {
		return "the caller's " + p
	}
	return ""
}

// guard: under TLS, PREPARE, DECISION and Status are taken only from a certificate with the node mark of this cluster (R8).
func (s *service) guard(ctx context.Context) error {
	if !s.nodeOnly {
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
	if problem := NodeCallerProblem(ti.State.PeerCertificates[0], s.engine.ClusterID()); problem != "" {
		return status.Error(codes.PermissionDenied, problem)
	}
	return nil
}

// answerError turns an engine error into the gRPC status the caller gets: a Refusal as it is, anything else INTERNAL with the reason (never a stack trace).
func (s *service) answerError(what, txnID string, err error) error {
	var r *Refusal
	if errors.As(err, &r) {
		if what == "DECISION" {
			s.engine.Log("refused-decision", map[string]any{"txn_id": txnID, "participant_id": s.engine.ParticipantID, "reason": r.Details})
		}
		return status.Error(r.Code, r.Details)
	}
	s.engine.Log("failed", map[string]any{"txn_id": txnID, "participant_id": s.engine.ParticipantID, "what": what, "error": clip(err.Error(), 512)})
	return status.Error(codes.Internal, fmt.Sprintf("%s of %s failed here: %s", what, txnID, clip(err.Error(), 512)))
}

func (s *service) prepare(q *ppb.PrepareRequest) (*ppb.Vote, error) {
	yes, reason, err := s.engine.Prepare(q.ClusterId, q.TxnId, q.ParticipantId, q.Payload, q.TimeoutMs)
	if err != nil {
		return nil, s.answerError("PREPARE", q.TxnId, err)
	}
	v := ppb.VoteValue_VOTE_NO
	var ttlMs uint64
	if yes {
		v = ppb.VoteValue_VOTE_YES
		ttlMs = s.engine.reserveTTLMs(q.TxnId)
	}
	return &ppb.Vote{TxnId: q.TxnId, ParticipantId: s.engine.ParticipantID, Vote: v, Reason: reason, ReserveTtlMs: ttlMs}, nil
}

func (s *service) decide(d *ppb.DecideRequest) (*ppb.Ack, error) {
	if d.Decision != ppb.DecisionValue_DECISION_COMMIT && d.Decision != ppb.DecisionValue_DECISION_ABORT {
		return nil, status.Error(codes.InvalidArgument, "decision must be DECISION_COMMIT or DECISION_ABORT")
	}
	if err := s.engine.Decide(d.ClusterId, d.TxnId, d.ParticipantId, d.Decision == ppb.DecisionValue_DECISION_COMMIT, "decision"); err != nil {
		return nil, s.answerError("DECISION", d.TxnId, err)
	}
	return &ppb.Ack{TxnId: d.TxnId, ParticipantId: s.engine.ParticipantID}, nil
}

func (s *service) Prepare(ctx context.Context, q *ppb.PrepareRequest) (*ppb.Vote, error) {
	if err := s.guard(ctx); err != nil {
		return nil, err
	}
	return s.prepare(q)
}

func (s *service) Decide(ctx context.Context, d *ppb.DecideRequest) (*ppb.Ack, error) {
	if err := s.guard(ctx); err != nil {
		return nil, err
	}
	return s.decide(d)
}

func (s *service) Status(ctx context.Context, q *ppb.StatusRequest) (*ppb.StatusAnswer, error) {
	if err := s.guard(ctx); err != nil {
		return nil, err
	}
	st, err := s.engine.Status(q.ClusterId, q.TxnId, q.ParticipantId)
	if err != nil {
		return nil, s.answerError("Status", q.TxnId, err)
	}
	return &ppb.StatusAnswer{TxnId: q.TxnId, ParticipantId: s.engine.ParticipantID, Status: st}, nil
}

// answer is one request of an Exchange stream: what the unary call would have answered, or its status as an ExchangeError.
func (s *service) answer(r *ppb.ExchangeRequest) *ppb.ExchangeAnswer {
	var err error
	switch b := r.Body.(type) {
	case *ppb.ExchangeRequest_Prepare:
		var v *ppb.Vote
		if v, err = s.prepare(b.Prepare); err == nil {
			return &ppb.ExchangeAnswer{Id: r.Id, Body: &ppb.ExchangeAnswer_Vote{Vote: v}}
		}
	case *ppb.ExchangeRequest_Decision:
		var a *ppb.Ack
		if a, err = s.decide(b.Decision); err == nil {
			return &ppb.ExchangeAnswer{Id: r.Id, Body: &ppb.ExchangeAnswer_Ack{Ack: a}}
		}
	default:
		err = status.Error(codes.InvalidArgument, "an exchange request carries a prepare or a decision")
	}
	st, _ := status.FromError(err)
	return &ppb.ExchangeAnswer{Id: r.Id, Body: &ppb.ExchangeAnswer_Error{Error: &ppb.ExchangeError{Code: uint32(st.Code()), Details: st.Message()}}}
}

// Exchange is the leader's stream of PREPAREs and DECISIONs: each answered by id as soon as it is done, in any order.
func (s *service) Exchange(stream ppb.Participant_ExchangeServer) error {
	if err := s.guard(stream.Context()); err != nil {
		return err
	}
	peerAddr := ""
	if p, ok := peer.FromContext(stream.Context()); ok {
		peerAddr = p.Addr.String()
	}
	s.engine.Log("exchange-opened", map[string]any{"participant_id": s.engine.ParticipantID, "peer": peerAddr})
	answers := make(chan *ppb.ExchangeAnswer, ExchangeInFlightMax)
	slots := make(chan struct{}, ExchangeInFlightMax)
	var working sync.WaitGroup
	// taking: false once the participant is closing; requests read after that are not worked on.
	var mu sync.Mutex
	taking := true
	// The reader: it ends with the stream (the leader closed it, or it broke) and closes answers once every worker is done.
	go func() {
		defer func() {
			working.Wait()
			close(answers)
		}()
		for {
			batch, err := stream.Recv()
			if err != nil {
				return
			}
			for _, r := range batch.Requests {
				select {
				case slots <- struct{}{}:
				case <-stream.Context().Done():
					return
				}
				mu.Lock()
				if !taking {
					mu.Unlock()
					<-slots
					continue
				}
				working.Add(1)
				mu.Unlock()
				go func(r *ppb.ExchangeRequest) {
					defer working.Done()
					a := s.answer(r)
					select {
					case answers <- a:
					case <-stream.Context().Done():
					}
					<-slots
				}(r)
			}
		}
	}()
	send := func(first *ppb.ExchangeAnswer) error {
		out := []*ppb.ExchangeAnswer{first}
	more:
		for len(out) < AnswerBatchMax {
			select {
			case a, ok := <-answers:
				if !ok {
					break more
				}
				out = append(out, a)
			default:
				break more
			}
		}
		if err := stream.Send(&ppb.AnswerBatch{Answers: out}); err != nil {
			// The stream is gone; the workers still finish (their work is durable) and drop their answers.
			go func() {
				for range answers {
				}
			}()
			return err
		}
		return nil
	}
	for {
		select {
		case first, ok := <-answers:
			if !ok {
				return nil
			}
			if err := send(first); err != nil {
				return err
			}
		case <-s.closing:
			return s.close(stream, answers, &mu, &taking, &working, send)
		}
	}
}

// close ends an Exchange stream of a participant that stops cleanly: no new request is taken, the
// ones taken are answered, and the last message says closing, so the leader shows the participant
// closed rather than unreachable (a transaction that enlists it is aborted at once).
func (s *service) close(stream ppb.Participant_ExchangeServer, answers <-chan *ppb.ExchangeAnswer, mu *sync.Mutex, taking *bool, working *sync.WaitGroup, send func(*ppb.ExchangeAnswer) error) error {
	mu.Lock()
	*taking = false
	mu.Unlock()
	s.engine.Log("exchange-closing", map[string]any{"participant_id": s.engine.ParticipantID})
	done := make(chan struct{})
	go func() { working.Wait(); close(done) }()
	for {
		select {
		case a, ok := <-answers:
			if !ok {
				return stream.Send(&ppb.AnswerBatch{Closing: true})
			}
			if err := send(a); err != nil {
				return err
			}
		case <-done:
			// Every taken request has put its answer in the channel (buffered): send what is left.
			for {
				select {
				case a, ok := <-answers:
					if !ok {
						return stream.Send(&ppb.AnswerBatch{Closing: true})
					}
					if err := send(a); err != nil {
						return err
					}
				default:
					return stream.Send(&ppb.AnswerBatch{Closing: true})
				}
			}
		}
	}
}

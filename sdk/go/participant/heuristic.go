package participant

// Acts done by hand at a resource (R4: deciding alone is an operator's
// heuristic act, recorded and reported). A resource that records them (the
// PostgreSQL resource: participant/postgres, ResolveByHand) implements
// HeuristicSource, and the runtime reports each act to the cluster
// (Coordinator.ReportHeuristic) until the cluster acknowledges it; the
// cluster compares it with its decision (HEURCOM, HEURRB, HEURMIX, HEURHAZ).

import (
	"time"

	"verdict/sdk/go/client"
	cpb "verdict/sdk/go/pb/coordinatorpb"
)

// HeuristicReportEvery is how often unreported acts are read and reported.
const HeuristicReportEvery = 5 * time.Second

// HeuristicAct is one act done by hand.
type HeuristicAct struct {
	TxnID string `json:"txn_id"`
	GID   string `json:"gid"`
	// Outcome is "committed" or "aborted".
	Outcome  string `json:"outcome"`
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
	AtMs     uint64 `json:"at_ms"`
	// ReportedAtMs is when the cluster acknowledged the report; 0 until then.
	ReportedAtMs uint64 `json:"reported_at_ms,omitempty"`
}

// HeuristicSource is a resource that records acts done by hand.
type HeuristicSource interface {
	// UnreportedHeuristics are the acts the cluster has not acknowledged, oldest first (a bounded number per call).
	UnreportedHeuristics() ([]HeuristicAct, error)
	// MarkHeuristicReported records that the cluster acknowledged the act of gid.
	MarkHeuristicReported(gid string) error
}

// reportHeuristics reports each unreported act once; one the cluster does not take waits for the next round.
func (p *Participant) reportHeuristics(src HeuristicSource) {
	acts, err := src.UnreportedHeuristics()
	if err != nil {
		p.cfg.Log("heuristic-read-failed", map[string]any{"participant_id": p.cfg.ParticipantID, "error": clip(err.Error(), 512)})
		return
	}
	for _, a := range acts {
		if p.stopped() {
			return
		}
		outcome := cpb.Outcome_OUTCOME_ABORTED
		if a.Outcome == "committed" {
			outcome = cpb.Outcome_OUTCOME_COMMITTED
		}
		req := &cpb.ReportHeuristicRequest{ClusterId: p.Engine.ClusterID(), ParticipantId: p.cfg.ParticipantID, TxnId: a.TxnID, Outcome: outcome, Gid: a.GID, Operator: a.Operator, Reason: a.Reason, AtMs: a.AtMs}
		r := &cpb.ReportHeuristicResponse{}
		ctx, cancel := p.askContext()
		err := p.Client.Conn.Call(ctx, "ReportHeuristic", req, r, client.CallOptions{CallTimeout: 5 * time.Second, AttemptTimeout: 2 * time.Second})
		cancel()
		if err == nil {
			err = src.MarkHeuristicReported(a.GID)
		}
		if err != nil {
			p.cfg.Log("heuristic-not-reported", map[string]any{"txn_id": a.TxnID, "participant_id": p.cfg.ParticipantID, "error": clip(err.Error(), 512)})
			continue
		}
		p.cfg.Log("heuristic-reported", map[string]any{"txn_id": a.TxnID, "participant_id": p.cfg.ParticipantID, "outcome": a.Outcome, "operator": a.Operator, "kind": r.GetHeuristic().GetKind()})
	}
}

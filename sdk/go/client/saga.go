package client

// Sagas from the application (docs/sagas.md): start one, ask its status,
// wait for its end. The calls go to the Sagas service of whichever node
// leads, with the same leader following and retry rule as every call
// (connection.go); the Go twin of the TypeScript SDK's client.saga(...)
// (src/client/saga.ts). A start is retried with the same saga id (R7): the
// cluster answers a repeated start with the saga as it is, so a retried
// start never runs a saga twice.

import (
	"context"
	"errors"
	"fmt"
	"time"

	spb "verdict/sdk/go/pb/sagapb"
)

// Bounds of a saga's definition, as the cluster checks them (src/saga/commands.ts).
const (
	SagaStepsMax   = 64
	SagaIDBytesMax = 128
	sagaWaitSlice  = 20 * time.Second
	// SagaWaitMax is the longest a node holds a SagaStatus call (the node's own bound); a longer wait is cut to it.
	SagaWaitMax       = 60 * time.Second
	sagaNotFoundPause = 100 * time.Millisecond
)

// Saga states, as SagaInfo.state spells them.
const (
	SagaRunning      = "running"
	SagaCompensating = "compensating"
	SagaFinished     = "finished"
	SagaCompensated  = "compensated"
)

// SagaStep is one step of a saga: the registered step service, the handler's name there, and its input.
type SagaStep struct {
	Service string
	Name    string
	Input   string
}

// SagaSpec defines a saga. ID "" is a new UUIDv7; reuse an id only to
// retry the same start (a saga id runs once). Pivot is the index of the
// pivot step (a failure after it is retried forward, never compensated);
// nil for none. Type and Labels are shown to the person a stuck saga is
// shown to (the cluster checks their bounds).
type SagaSpec struct {
	ID     string
	Steps  []SagaStep
	Pivot  *int
	Type   string
	Labels map[string]string
}

// SagaStuck is the call a stuck saga keeps failing.
type SagaStuck struct {
	Step      int
	Kind      string
	Attempts  uint32
	LastError string
}

// SagaStatus is a saga as the cluster's applied state has it.
type SagaStatus struct {
	ID string
	// State is running, compensating, finished or compensated.
	State string
	// Steps holds each step's state: pending, running, done, failed, compensating or compensated.
	Steps   []string
	Outputs []string
	// Pivot is the pivot step's index, -1 for none.
	Pivot  int
	Type   string
	Labels map[string]string
	// Stuck is nil unless a call keeps failing.
	Stuck *SagaStuck
	// Info is the whole answer (timeline, attempts, definition).
	Info *spb.SagaInfo
}

// Ended says whether the saga finished or was compensated.
func (s SagaStatus) Ended() bool { return s.State == SagaFinished || s.State == SagaCompensated }

// CheckSagaID: 1-128 printable ASCII characters (0x21-0x7e, so no space) without '/' (the step keys use it as a
// separator): the cluster's rule.
func CheckSagaID(id string) error {
	if id == "" || len(id) > SagaIDBytesMax {
		return invalidArgument("saga id %q must be 1-%d characters", clipText(id, 40), SagaIDBytesMax)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= 0x20 || id[i] > 0x7e || id[i] == '/' {
			return invalidArgument("saga id %q must be printable ASCII without '/'", clipText(id, 40))
		}
	}
	return nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func toSagaStatus(id string, i *spb.SagaInfo) (SagaStatus, error) {
	if i.GetSagaId() != id {
		return SagaStatus{}, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("asked about saga %s, the cluster answered about %q", id, clipText(i.GetSagaId(), 40))}
	}
	switch i.GetState() {
	case SagaRunning, SagaCompensating, SagaFinished, SagaCompensated:
	default:
		return SagaStatus{}, &Error{Code: "INTERNAL", Reason: fmt.Sprintf("saga %s: the cluster answered state %q", id, clipText(i.GetState(), 40))}
	}
	s := SagaStatus{ID: id, State: i.State, Steps: i.StepStatus, Outputs: i.Outputs, Pivot: int(i.PivotPlusOne) - 1, Type: i.Type, Labels: i.Labels, Info: i}
	if i.Stuck {
		s.Stuck = &SagaStuck{Step: int(i.StuckStep), Kind: i.StuckKind, Attempts: i.StuckAttempts, LastError: i.StuckError}
	}
	return s, nil
}

// StartSaga starts a saga and answers it as the cluster logged it; the
// cluster then runs it to its end, whoever leads. A retried start with the
// same id answers the saga as it is.
func (c *Client) StartSaga(ctx context.Context, spec SagaSpec) (SagaStatus, error) {
	id := spec.ID
	if id == "" {
		id = NewTxnID()
	}
	if err := CheckSagaID(id); err != nil {
		return SagaStatus{}, err
	}
	if len(spec.Steps) == 0 || len(spec.Steps) > SagaStepsMax {
		return SagaStatus{}, invalidArgument("saga %s has %d steps: it takes 1-%d", id, len(spec.Steps), SagaStepsMax)
	}
	req := &spb.StartSagaRequest{SagaId: id, Type: spec.Type, Labels: spec.Labels}
	for k, st := range spec.Steps {
		if err := CheckParticipantID(st.Service); err != nil {
			return SagaStatus{}, invalidArgument("saga %s step %d: its service is not a step service id: %v", id, k, err)
		}
		req.Steps = append(req.Steps, &spb.StepDef{Service: st.Service, Name: st.Name, Input: st.Input})
	}
	if spec.Pivot != nil {
		if *spec.Pivot < 0 || *spec.Pivot >= len(spec.Steps) {
			return SagaStatus{}, invalidArgument("saga %s: pivot %d is not one of its %d steps", id, *spec.Pivot, len(spec.Steps))
		}
		req.PivotPlusOne = uint32(*spec.Pivot + 1)
	}
	info := &spb.SagaInfo{}
	if err := c.Conn.Call(ctx, "StartSaga", req, info, CallOptions{Service: SagasService}); err != nil {
		return SagaStatus{}, err
	}
	return toSagaStatus(id, info)
}

// SagaStatus asks for a saga's status; with wait > 0 (at most SagaWaitMax)
// the node answers once the saga ended or wait has passed, whichever comes first. A saga the
// answering node does not know is an *Error with Code NOT_FOUND.
func (c *Client) SagaStatus(ctx context.Context, id string, wait time.Duration) (SagaStatus, error) {
	if err := CheckSagaID(id); err != nil {
		return SagaStatus{}, err
	}
	if wait < 0 {
		wait = 0
	}
	if wait > SagaWaitMax {
		wait = SagaWaitMax
	}
	o := CallOptions{Service: SagasService, CallTimeout: c.Conn.CallTimeout + wait, AttemptTimeout: c.Conn.AttemptTimeout + wait}
	info := &spb.SagaInfo{}
	if err := c.Conn.Call(ctx, "SagaStatus", &spb.SagaStatusRequest{SagaId: id, WaitMs: uint32(wait / time.Millisecond)}, info, o); err != nil {
		return SagaStatus{}, err
	}
	return toSagaStatus(id, info)
}

// SagaStates asks for the states of many sagas (at most SagaIDsPerCallMax)
// in one call per decision group: id → state (running, compensating,
// finished, compensated), "" for a saga the cluster does not know or will
// not show this caller. A cluster from before SagaStates answers an *Error
// with Code UNIMPLEMENTED.
func (c *Client) SagaStates(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) > SagaIDsPerCallMax {
		return nil, &Error{Code: "INVALID_ARGUMENT", Reason: fmt.Sprintf("SagaStates takes at most %d saga ids; %d were given", SagaIDsPerCallMax, len(ids))}
	}
	byGroup := map[int][]string{}
	var order []int
	for _, id := range ids {
		if err := CheckSagaID(id); err != nil {
			return nil, err
		}
		g := c.Conn.GroupOf(id)
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], id)
	}
	out := make(map[string]string, len(ids))
	for _, g := range order {
		part := byGroup[g]
		r := &spb.SagaStatesResponse{}
		if err := c.Conn.Call(ctx, "SagaStates", &spb.SagaStatesRequest{SagaIds: part}, r, CallOptions{Service: SagasService}); err != nil {
			return nil, err
		}
		asked := make(map[string]bool, len(part))
		for _, id := range part {
			asked[id] = true
		}
		for _, a := range r.GetSagas() {
			if asked[a.GetSagaId()] {
				out[a.GetSagaId()] = a.GetState()
			}
		}
	}
	return out, nil
}

// SagaIDsPerCallMax: saga ids in one SagaStates or EndSagas call at most (src/transport/saga-rpc.ts).
const SagaIDsPerCallMax = 1024

// WaitSaga waits until the saga finished or was compensated, however long
// (compensations never give up), or until ctx ends. A node that has not yet
// applied the start answers NOT_FOUND: it is asked again.
func (c *Client) WaitSaga(ctx context.Context, id string) (SagaStatus, error) {
	for {
		s, err := c.SagaStatus(ctx, id, sagaWaitSlice)
		var e *Error
		switch {
		case err == nil && s.Ended():
			return s, nil
		case err == nil:
		case errors.As(err, &e) && e.Code == "NOT_FOUND":
			t := time.NewTimer(sagaNotFoundPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return SagaStatus{}, &Error{Code: "CANCELLED", Reason: ctx.Err().Error()}
			case <-t.C:
			}
		case errors.As(err, &e) && e.Exhausted && ctx.Err() == nil:
			// No node answered within one wait: keep waiting while the caller does.
		default:
			return SagaStatus{}, err
		}
		if ctx.Err() != nil {
			return SagaStatus{}, &Error{Code: "CANCELLED", Reason: ctx.Err().Error()}
		}
	}
}

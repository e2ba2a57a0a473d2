// The Go client of test/process/go-sdk.test.ts: runs the operations given as
// JSON on the command line and prints one JSON line per result.
//
//	client <nodes,...> '<ops JSON>' [ca,cert,key]
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"verdict/sdk/go/client"
	ppb "verdict/sdk/go/pb/participantpb"
	spb "verdict/sdk/go/pb/sagapb"
)

type op struct {
	Op        string                     `json:"op"`
	Txn       string                     `json:"txn"`
	Enlist    map[string]json.RawMessage `json:"enlist"`
	TimeoutMs uint64                     `json:"timeout_ms"`
	Reason    string                     `json:"reason"`
	// Address: for prepare-direct and step-direct, a participant's or step service's address to send a PREPARE to with this client's certificate.
	Address string `json:"address"`
	// Participant: for prepare-direct, its id.
	Participant string `json:"participant"`
	ClusterID   string `json:"cluster_id"`
	// Saga and Steps: for saga-start ("" id: a new one) and saga-wait.
	Saga  string            `json:"saga"`
	Steps []client.SagaStep `json:"steps"`
	// Limit: for list, Client.Transactions' limit.
	Limit uint32 `json:"limit"`
}

// runSaga starts a saga (saga-start) or waits for its end (saga-wait).
func runSaga(ctx context.Context, c *client.Client, o op) map[string]any {
	var s client.SagaStatus
	var err error
	if o.Op == "saga-start" {
		s, err = c.StartSaga(ctx, client.SagaSpec{ID: o.Saga, Steps: o.Steps})
	} else {
		wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		defer cancel()
		s, err = c.WaitSaga(wctx, o.Saga)
	}
	var ve *client.Error
	switch {
	case errors.As(err, &ve):
		return map[string]any{"saga": o.Saga, "error": ve.Code, "message": ve.Reason}
	case err != nil:
		return map[string]any{"saga": o.Saga, "error": "error", "message": err.Error()}
	}
	return map[string]any{"saga": s.ID, "state": s.State, "steps": s.Steps, "outputs": s.Outputs}
}

// prepareDirect sends a PREPARE straight to a participant, as only a node may (R8); the answer's code.
func prepareDirect(ctx context.Context, files *client.TLSFiles, o op) map[string]any {
	pool, cert, err := files.Load()
	if err != nil {
		return map[string]any{"txn": o.Txn, "error": "error", "message": err.Error()}
	}
	cc, err := grpc.Dial(o.Address, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})))
	if err != nil {
		return map[string]any{"txn": o.Txn, "error": "error", "message": err.Error()}
	}
	defer cc.Close()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := ppb.NewParticipantClient(cc).Prepare(actx, &ppb.PrepareRequest{ClusterId: o.ClusterID, TxnId: o.Txn, ParticipantId: o.Participant, Payload: []byte(`{"set":{"forged":"yes"}}`)})
	if err != nil {
		st := status.Convert(err)
		return map[string]any{"txn": o.Txn, "error": st.Code().String(), "message": st.Message()}
	}
	return map[string]any{"txn": o.Txn, "vote": v.Vote.String()}
}

// stepDirect calls a step service's Execute straight, with this client's certificate, as only a node may (R8); the answer's code.
func stepDirect(ctx context.Context, files *client.TLSFiles, o op) map[string]any {
	pool, cert, err := files.Load()
	if err != nil {
		return map[string]any{"saga": o.Saga, "error": "error", "message": err.Error()}
	}
	cc, err := grpc.Dial(o.Address, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})))
	if err != nil {
		return map[string]any{"saga": o.Saga, "error": "error", "message": err.Error()}
	}
	defer cc.Close()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := spb.NewSagaStepClient(cc).Execute(actx, &spb.StepRequest{ClusterId: o.ClusterID, SagaId: o.Saga, Step: 0, Key: o.Saga + "/0/action", Name: "reserve", Input: "forged"})
	if err != nil {
		st := status.Convert(err)
		return map[string]any{"saga": o.Saga, "error": st.Code().String(), "message": st.Message()}
	}
	return map[string]any{"saga": o.Saga, "status": r.Status.String()}
}

// list is Client.Transactions: each listed transaction's id and decision group.
func list(ctx context.Context, c *client.Client, o op) map[string]any {
	ts, err := c.Transactions(ctx, client.TransactionFilter{Limit: o.Limit}, client.CallOptions{})
	var ve *client.Error
	switch {
	case errors.As(err, &ve):
		return map[string]any{"op": "list", "error": ve.Code, "message": ve.Reason}
	case err != nil:
		return map[string]any{"op": "list", "error": "error", "message": err.Error()}
	}
	out := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		out = append(out, map[string]any{"txn_id": t.GetTxnId(), "group": t.Group})
	}
	return map[string]any{"op": "list", "transactions": out}
}

// payload: a JSON string is sent as its text, anything else as its JSON.
func payload(raw json.RawMessage) any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return []byte(raw)
}

func run(ctx context.Context, c *client.Client, o op) map[string]any {
	var r client.OutcomeResult
	var err error
	switch o.Op {
	case "commit":
		timeout := o.TimeoutMs
		if timeout == 0 {
			timeout = 20_000
		}
		var tx *client.Transaction
		if tx, err = c.Transaction(client.TxnOptions{TxnID: o.Txn, TimeoutMs: timeout}); err == nil {
			for pid, p := range o.Enlist {
				if err = tx.Enlist(pid, payload(p)); err != nil {
					break
				}
			}
			if err == nil {
				r, err = tx.Commit(ctx, 0)
			}
		}
	case "begin-abort":
		var tx *client.Transaction
		if tx, err = c.Begin(ctx, client.TxnOptions{TxnID: o.Txn}); err == nil {
			for pid, p := range o.Enlist {
				if err = tx.Enlist(pid, payload(p)); err != nil {
					break
				}
			}
			if err == nil {
				reason := o.Reason
				if reason == "" {
					reason = "the application changed its mind"
				}
				r, err = tx.Abort(ctx, reason)
			}
		}
	default:
		r, err = c.Outcome(ctx, o.Txn)
	}
	var unknown *client.OutcomeUnknownError
	var ve *client.Error
	switch {
	case errors.As(err, &unknown):
		return map[string]any{"txn": o.Txn, "error": "OutcomeUnknownError", "message": err.Error()}
	case errors.As(err, &ve):
		return map[string]any{"txn": o.Txn, "error": ve.Code, "message": ve.Reason}
	case err != nil:
		return map[string]any{"txn": o.Txn, "error": "error", "message": err.Error()}
	}
	return map[string]any{"txn": o.Txn, "outcome": r.Outcome, "reason": r.Reason}
}

func main() {
	var ops []op
	if len(os.Args) < 3 || json.Unmarshal([]byte(os.Args[2]), &ops) != nil {
		fmt.Fprintln(os.Stderr, "usage: client <nodes,...> '<ops JSON>' [ca,cert,key]")
		os.Exit(2)
	}
	o := client.Options{Insecure: true}
	if len(os.Args) > 3 {
		f := strings.Split(os.Args[3], ",")
		o = client.Options{TLS: &client.TLSFiles{CA: f[0], Cert: f[1], Key: f[2]}}
	}
	if ms, err := strconv.Atoi(os.Getenv("VERDICT_TEST_CALL_TIMEOUT_MS")); err == nil {
		o.CallTimeout = time.Duration(ms) * time.Millisecond
	} else {
		o.CallTimeout = 60 * time.Second
	}
	c, err := client.New(strings.Split(os.Args[1], ","), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	defer c.Close()
	for _, op := range ops {
		var r map[string]any
		if op.Op == "saga-start" || op.Op == "saga-wait" {
			r = runSaga(context.Background(), c, op)
		} else if op.Op == "list" {
			r = list(context.Background(), c, op)
		} else if op.Op == "step-direct" && o.TLS != nil {
			r = stepDirect(context.Background(), o.TLS, op)
		} else if op.Op == "prepare-direct" && o.TLS != nil {
			r = prepareDirect(context.Background(), o.TLS, op)
		} else {
			r = run(context.Background(), c, op)
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

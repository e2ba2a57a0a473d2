// The Go client of test/process/go-sdk.test.ts: runs the operations given as
// JSON on the command line and prints one JSON line per result.
//
//	client <nodes,...> '<ops JSON>' [ca,cert,key]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"verdict/sdk/go/client"
)

type op struct {
	Op        string                     `json:"op"`
	Txn       string                     `json:"txn"`
	Enlist    map[string]json.RawMessage `json:"enlist"`
	TimeoutMs uint64                     `json:"timeout_ms"`
	Reason    string                     `json:"reason"`
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
		b, _ := json.Marshal(run(context.Background(), c, op))
		fmt.Println(string(b))
	}
}

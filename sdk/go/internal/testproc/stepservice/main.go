// The Go step service of test/process/go-saga.test.ts: the saga package's
// service with two steps, as an application runs it. "reserve" reserves
// (effect "reserve"; its compensation "release"); "charge" charges its
// input (effect "charge"), or refuses when the input is "decline" (its
// compensation "refund"). Events are JSON lines on stdout: "ran" when a
// handler runs, "applied" when an effect is applied (on its record, and
// again from the inbox at each start), "ready" once registered. A
// reserve whose input is "hold" waits, after its record is written and
// before its answer, while --hold-file exists, so the test can SIGKILL the
// service between the durable write and the answer.
//
// With --pg-url the inbox is in that database (saga-postgres), and each
// effect is a row of go_saga_effects (key, effect) written in the step's
// transaction; a declined charge writes one and then answers FAILED (the
// inbox rolls it back); a reserve of input "hold" waits inside its
// transaction, before the commit, while --hold-file exists.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"verdict/sdk/go/client"
	"verdict/sdk/go/saga"
)

var out sync.Mutex

func emit(event string, fields map[string]any) {
	line := map[string]any{"event": event}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	out.Lock()
	defer out.Unlock()
	fmt.Println(string(b))
}

func ran(r saga.Request) {
	emit("ran", map[string]any{"key": r.Key, "input": r.Input, "attempt": r.Attempt})
}

func holdWhile(file string, key string) {
	if file == "" {
		return
	}
	if _, err := os.Stat(file); err != nil {
		return
	}
	emit("holding", map[string]any{"key": key})
	for {
		if _, err := os.Stat(file); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pgSteps are the steps on PostgreSQL: each effect a row of go_saga_effects, in the step's transaction.
func pgSteps(dsn, holdFile string) *saga.PgSteps {
	effect := func(name string) saga.PgHandler {
		return func(ctx context.Context, tx *sql.Tx, r saga.Request) (saga.Result, error) {
			ran(r)
			if _, err := tx.ExecContext(ctx, "INSERT INTO go_saga_effects (key, effect) VALUES ($1, $2)", r.Key, name); err != nil {
				return saga.Result{}, err
			}
			if name == "reserve" && r.Input == "hold" {
				holdWhile(holdFile, r.Key)
			}
			if name == "charge" && r.Input == "decline" {
				return saga.Failed("the card was declined"), nil
			}
			return saga.Done(name+"d "+r.Input, ""), nil
		}
	}
	return &saga.PgSteps{DSN: dsn, Steps: map[string]saga.PgStep{
		"reserve": {Action: effect("reserve"), Compensate: effect("release")},
		"charge":  {Action: effect("charge"), Compensate: effect("refund")},
	}}
}

func main() {
	id := flag.String("id", "", "step service id")
	clusterID := flag.String("cluster-id", "", "the cluster's id")
	nodes := flag.String("nodes", "", "node addresses, host:port,...")
	listen := flag.String("listen", "", "host:port to serve on, and the endpoint registered")
	dataDir := flag.String("data", "", "the inbox's directory, kept across restarts")
	holdFile := flag.String("hold-file", "", "a reserve of input \"hold\" waits while this file exists, after its record is written")
	tlsFiles := flag.String("tls", "", "ca,cert,key: mutual TLS instead of plaintext")
	pgURL := flag.String("pg-url", "", "the inbox and the effects in this PostgreSQL database")
	flag.Parse()
	var tf *client.TLSFiles
	if *tlsFiles != "" {
		f := strings.Split(*tlsFiles, ",")
		tf = &client.TLSFiles{CA: f[0], Cert: f[1], Key: f[2]}
	}
	steps := map[string]saga.Step{
		"reserve": {
			Action: func(r saga.Request) (saga.Result, error) {
				ran(r)
				return saga.Done("reserved "+r.Input, "reserve"), nil
			},
			Compensate: func(r saga.Request) (saga.Result, error) { ran(r); return saga.Done("released", "release"), nil },
		},
		"charge": {
			Action: func(r saga.Request) (saga.Result, error) {
				ran(r)
				if r.Input == "decline" {
					return saga.Failed("the card was declined"), nil
				}
				return saga.Done("charged "+r.Input, "charge"), nil
			},
			Compensate: func(r saga.Request) (saga.Result, error) { ran(r); return saga.Done("refunded", "refund"), nil },
		},
	}
	apply := func(r saga.Record) {
		emit("applied", map[string]any{"key": r.Key, "effect": r.Effect})
		if *holdFile == "" || r.Kind != saga.Action || !strings.HasPrefix(r.Output, "reserved hold") {
			return
		}
		emit("holding", map[string]any{"key": r.Key})
		for {
			if _, err := os.Stat(*holdFile); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cfg := saga.Config{
		ServiceID: *id, ClusterID: *clusterID, Nodes: strings.Split(*nodes, ","), DataDir: *dataDir, Endpoint: *listen,
		Steps: steps, Apply: apply, TLS: tf, Insecure: tf == nil, Log: emit,
	}
	if *pgURL != "" {
		cfg.Steps, cfg.Apply, cfg.Postgres = nil, nil, pgSteps(*pgURL, *holdFile)
	}
	svc, err := saga.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "step service:", err)
		os.Exit(1)
	}
	emit("ready", map[string]any{"endpoint": svc.Endpoint})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	svc.Stop()
}

// The Go participant of test/process/go-sdk.test.ts and
// test/pg/go-postgres.test.ts: a memory (or PostgreSQL, or TCC) participant
// whose commits wait while --hold-file exists, so the test can SIGKILL it
// after it voted YES and before it applied the decision. Events are JSON
// lines on stdout.
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
	"verdict/sdk/go/participant"
	"verdict/sdk/go/participant/postgres"
	"verdict/sdk/go/tcc"
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

// holding is any resource whose commits wait while the hold file exists, and whose PREPAREs wait while the prepare hold file exists.
type holding struct {
	participant.Resource
	holdFile        string
	holdPrepareFile string
}

func waitWhile(file string) {
	for {
		if _, err := os.Stat(file); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h holding) Prepare(txnID string, payload []byte, timeoutMs uint64) (string, error) {
	if _, err := os.Stat(h.holdPrepareFile); h.holdPrepareFile != "" && err == nil {
		emit("holding-prepare", map[string]any{"txn_id": txnID})
		waitWhile(h.holdPrepareFile)
	}
	return h.Resource.Prepare(txnID, payload, timeoutMs)
}

func (h holding) Commit(txnID string) error {
	if _, err := os.Stat(h.holdFile); err == nil {
		emit("holding", map[string]any{"txn_id": txnID})
		waitWhile(h.holdFile)
	}
	return h.Resource.Commit(txnID)
}

// seatHandlers reserve seats of one show in go_seats (show, free, held, sold); the payload is "<show>:<seats>".
type seatHandlers struct{ ttl time.Duration }

func parseSeats(b tcc.Branch) (string, int, error) {
	var show string
	var n int
	if _, err := fmt.Sscanf(strings.Replace(string(b.Payload), ":", " ", 1), "%s %d", &show, &n); err != nil || n <= 0 {
		return "", 0, &tcc.Refusal{Reason: fmt.Sprintf("payload %q is not <show>:<seats>", b.Payload)}
	}
	return show, n, nil
}

func (h seatHandlers) Try(ctx context.Context, tx *sql.Tx, b tcc.Branch) (tcc.TryResult, error) {
	show, n, err := parseSeats(b)
	if err != nil {
		return tcc.TryResult{}, err
	}
	r, err := tx.ExecContext(ctx, "UPDATE go_seats SET free = free - $1, held = held + $1 WHERE show = $2 AND free >= $1", n, show)
	if err != nil {
		return tcc.TryResult{}, err
	}
	if k, _ := r.RowsAffected(); k == 0 {
		return tcc.TryResult{}, &tcc.Refusal{Reason: fmt.Sprintf("not %d free seats for %s", n, show)}
	}
	return tcc.TryResult{TTL: h.ttl}, nil
}

func (h seatHandlers) Confirm(ctx context.Context, tx *sql.Tx, b tcc.Branch) error {
	show, n, err := parseSeats(b)
	if err == nil {
		_, err = tx.ExecContext(ctx, "UPDATE go_seats SET held = held - $1, sold = sold + $1 WHERE show = $2", n, show)
	}
	return err
}

func (h seatHandlers) Cancel(ctx context.Context, tx *sql.Tx, b tcc.Branch) error {
	show, n, err := parseSeats(b)
	if err == nil {
		_, err = tx.ExecContext(ctx, "UPDATE go_seats SET held = held - $1, free = free + $1 WHERE show = $2", n, show)
	}
	return err
}

func main() {
	id := flag.String("id", "", "participant id")
	nodes := flag.String("nodes", "", "node addresses, host:port,...")
	dataDir := flag.String("data-dir", "", "journal directory")
	listen := flag.String("listen", "", "host:port to serve on")
	holdFile := flag.String("hold-file", "", "commits wait while this file exists")
	holdPrepareFile := flag.String("hold-prepare-file", "", "PREPAREs wait while this file exists")
	tlsFiles := flag.String("tls", "", "ca,cert,key: mutual TLS instead of plaintext")
	clusterID := flag.String("cluster-id", "", "the cluster's id (asked when empty)")
	pgURL := flag.String("pg-url", "", "a PostgreSQL resource on this database instead of memory (needs --cluster-id)")
	tccURL := flag.String("tcc-pg-url", "", "a TCC resource on this database, whose handlers hold, sell and release seats of go_seats")
	ttlMs := flag.Int("tcc-ttl-ms", 0, "the TTL the TCC Try gives its reserve")
	flag.Parse()
	var tf *client.TLSFiles
	if *tlsFiles != "" {
		f := strings.Split(*tlsFiles, ",")
		tf = &client.TLSFiles{CA: f[0], Cert: f[1], Key: f[2]}
	}
	mem := participant.NewMemoryResource()
	var inner participant.Resource = mem
	if *pgURL != "" {
		pg, err := postgres.Open(context.Background(), *pgURL, *clusterID, *id, postgres.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "participant:", err)
			os.Exit(1)
		}
		inner = pg
	}
	var seats *tcc.Resource
	if *tccURL != "" {
		var err error
		if seats, err = tcc.Open(context.Background(), *tccURL, *id, seatHandlers{ttl: time.Duration(*ttlMs) * time.Millisecond}); err != nil {
			fmt.Fprintln(os.Stderr, "participant:", err)
			os.Exit(1)
		}
		inner = seats
	}
	p, err := participant.Start(context.Background(), participant.Config{
		ParticipantID: *id, Nodes: strings.Split(*nodes, ","), DataDir: *dataDir, Resource: holding{inner, *holdFile, *holdPrepareFile},
		Endpoint: *listen, ClusterID: *clusterID, TLS: tf, Insecure: tf == nil, Log: emit,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "participant:", err)
		os.Exit(1)
	}
	emit("ready", map[string]any{"endpoint": p.Endpoint, "values": mem.Values()})
	if seats != nil {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go tcc.WatchExpiries(ctx, p, seats, 100*time.Millisecond)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	p.Stop()
}

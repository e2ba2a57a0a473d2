// The Go participant of test/process/go-sdk.test.ts and
// test/pg/go-postgres.test.ts: a memory (or PostgreSQL) participant
// whose commits wait while --hold-file exists, so the test can SIGKILL it
// after it voted YES and before it applied the decision. Events are JSON
// lines on stdout.
package main

import (
	"context"
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

// holding is any resource whose commits wait while the hold file exists.
type holding struct {
	participant.Resource
	holdFile string
}

func (h holding) Commit(txnID string) error {
	if _, err := os.Stat(h.holdFile); err == nil {
		emit("holding", map[string]any{"txn_id": txnID})
		for {
			if _, err := os.Stat(h.holdFile); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return h.Resource.Commit(txnID)
}

func main() {
	id := flag.String("id", "", "participant id")
	nodes := flag.String("nodes", "", "node addresses, host:port,...")
	dataDir := flag.String("data-dir", "", "journal directory")
	listen := flag.String("listen", "", "host:port to serve on")
	holdFile := flag.String("hold-file", "", "commits wait while this file exists")
	tlsFiles := flag.String("tls", "", "ca,cert,key: mutual TLS instead of plaintext")
	clusterID := flag.String("cluster-id", "", "the cluster's id (asked when empty)")
	pgURL := flag.String("pg-url", "", "a PostgreSQL resource on this database instead of memory (needs --cluster-id)")
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
	p, err := participant.Start(context.Background(), participant.Config{
		ParticipantID: *id, Nodes: strings.Split(*nodes, ","), DataDir: *dataDir, Resource: holding{inner, *holdFile},
		Endpoint: *listen, ClusterID: *clusterID, TLS: tf, Insecure: tf == nil, Log: emit,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "participant:", err)
		os.Exit(1)
	}
	emit("ready", map[string]any{"endpoint": p.Endpoint, "values": mem.Values()})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	p.Stop()
}

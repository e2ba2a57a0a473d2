// The Go participant as a process for the participant conformance suite
// (test/conformance/): the SDK's runtime, exactly as an application runs
// it, taking the suite's common arguments (--id --cluster-id --nodes
// --listen --data [--tls ca,cert,key]) and --resource:
//
//   - memory (the default): with --probe, it answers GET /value/<key> there
//     with the committed value (404 for none), so the suite can check what
//     was applied;
//   - postgres --url URL: the PostgreSQL resource; the suite's payloads are
//     {"sql": [...]} and it reads the database itself;
//   - tcc --url URL: the TCC resource, whose Try checks a {"set": {k: v}}
//     payload and whose Confirm upserts it into conformance_kv (k, v).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"verdict/sdk/go/client"
	"verdict/sdk/go/participant"
	"verdict/sdk/go/participant/postgres"
	"verdict/sdk/go/tcc"
)

// kvTable is the suite's table of committed values (test/conformance/targets.ts).
const kvTable = "conformance_kv"

// kvHandlers are TCC handlers over conformance_kv: Try reserves nothing but
// refuses a payload that is not {"set": {key: text}}; Confirm writes the
// values; Cancel has nothing to release.
type kvHandlers struct{}

func kvWrites(b tcc.Branch) (map[string]string, error) {
	var p struct {
		Set map[string]string `json:"set"`
	}
	if err := json.Unmarshal(b.Payload, &p); err != nil || p.Set == nil {
		return nil, &tcc.Refusal{Reason: "the payload is not {\"set\": {key: text}}"}
	}
	return p.Set, nil
}

func (kvHandlers) Try(_ context.Context, _ *sql.Tx, b tcc.Branch) (tcc.TryResult, error) {
	_, err := kvWrites(b)
	return tcc.TryResult{}, err
}

func (kvHandlers) Confirm(ctx context.Context, tx *sql.Tx, b tcc.Branch) error {
	set, err := kvWrites(b)
	if err != nil {
		return err
	}
	for k, v := range set {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+kvTable+" (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", k, v); err != nil {
			return err
		}
	}
	return nil
}

func (kvHandlers) Cancel(context.Context, *sql.Tx, tcc.Branch) error { return nil }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "conformance participant:", err)
	os.Exit(1)
}

// serveProbe answers GET /value/<key> with the committed value of key as text: a string as it is, anything else as JSON.
func serveProbe(address string, mem *participant.MemoryResource) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		fail(fmt.Errorf("the probe cannot listen on %s: %w", address, err))
	}
	probe := http.NewServeMux()
	probe.HandleFunc("/value/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		v, ok := mem.Values()[strings.TrimPrefix(r.URL.Path, "/value/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		text, isString := v.(string)
		if !isString {
			b, _ := json.Marshal(v)
			text = string(b)
		}
		_, _ = w.Write([]byte(text))
	})
	server := &http.Server{Handler: probe, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(ln) }()
}

func main() {
	id := flag.String("id", "", "participant id")
	clusterID := flag.String("cluster-id", "", "the cluster's id")
	nodes := flag.String("nodes", "", "node addresses, host:port,...")
	listen := flag.String("listen", "", "host:port to serve on, and the endpoint registered")
	dataDir := flag.String("data", "", "journal directory, kept across restarts")
	probe := flag.String("probe", "", "host:port to answer GET /value/<key> on")
	tlsFiles := flag.String("tls", "", "ca,cert,key: mutual TLS instead of plaintext")
	resource := flag.String("resource", "memory", "memory, postgres or tcc")
	url := flag.String("url", "", "the database of --resource postgres or tcc")
	flag.Parse()
	if *id == "" || *nodes == "" || *listen == "" || *dataDir == "" {
		fail(fmt.Errorf("--id, --nodes, --listen and --data are required"))
	}
	var tf *client.TLSFiles
	if *tlsFiles != "" {
		f := strings.Split(*tlsFiles, ",")
		if len(f) != 3 {
			fail(fmt.Errorf("--tls takes ca,cert,key, not %q", *tlsFiles))
		}
		tf = &client.TLSFiles{CA: f[0], Cert: f[1], Key: f[2]}
	}
	if *resource != "memory" && *url == "" {
		fail(fmt.Errorf("--resource %s needs --url", *resource))
	}
	var res participant.Resource
	switch *resource {
	case "memory":
		mem := participant.NewMemoryResource()
		if *probe != "" {
			serveProbe(*probe, mem)
		}
		res = mem
	case "postgres":
		pg, err := postgres.Open(context.Background(), *url, *clusterID, *id, postgres.Options{})
		if err != nil {
			fail(err)
		}
		res = pg
	case "tcc":
		kv, err := tcc.Open(context.Background(), *url, *id, kvHandlers{})
		if err != nil {
			fail(err)
		}
		res = kv
	default:
		fail(fmt.Errorf("--resource is memory, postgres or tcc, not %q", *resource))
	}
	p, err := participant.Start(context.Background(), participant.Config{
		ParticipantID: *id, ClusterID: *clusterID, Nodes: strings.Split(*nodes, ","), DataDir: *dataDir, Resource: res,
		Endpoint: *listen, TLS: tf, Insecure: tf == nil, Log: participant.JSONLog,
	})
	if err != nil {
		fail(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	p.Stop()
}

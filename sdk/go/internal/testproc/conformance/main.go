// The Go participant as a process for the participant conformance suite
// (test/conformance/): the SDK's runtime with its memory resource, exactly
// as an application runs it, taking the suite's common arguments (--id
// --cluster-id --nodes --listen --data [--tls ca,cert,key]). With --probe, it
// answers GET /value/<key> there with the committed value (404 for none), so
// the suite can check what was applied.
package main

import (
	"context"
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
)

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
	mem := participant.NewMemoryResource()
	if *probe != "" {
		serveProbe(*probe, mem)
	}
	p, err := participant.Start(context.Background(), participant.Config{
		ParticipantID: *id, ClusterID: *clusterID, Nodes: strings.Split(*nodes, ","), DataDir: *dataDir, Resource: mem,
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

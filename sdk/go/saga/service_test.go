package saga

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"verdict/sdk/go/client"
	spb "verdict/sdk/go/pb/sagapb"
)

// fakeSagas is a node's Sagas service that knows some sagas' states.
type fakeSagas struct {
	spb.UnimplementedSagasServer
	mu     sync.Mutex
	states map[string]string
	// noStates: a node from before SagaStates (it answers UNIMPLEMENTED); statesCalls counts the SagaStates calls.
	noStates    bool
	statesCalls int
}

func (f *fakeSagas) SagaStates(_ context.Context, r *spb.SagaStatesRequest) (*spb.SagaStatesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noStates {
		return nil, status.Error(codes.Unimplemented, "unknown method SagaStates")
	}
	f.statesCalls++
	out := &spb.SagaStatesResponse{}
	for _, id := range r.SagaIds {
		out.Sagas = append(out.Sagas, &spb.SagaState{SagaId: id, State: f.states[id]})
	}
	return out, nil
}

func (f *fakeSagas) SagaStatus(_ context.Context, r *spb.SagaStatusRequest) (*spb.SagaInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.states[r.SagaId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no saga %s", r.SagaId)
	}
	return &spb.SagaInfo{SagaId: r.SagaId, State: s}, nil
}

func (f *fakeSagas) set(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[id] = state
}

func listen(t *testing.T, s *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// serveSteps runs a step service's SagaStep server on a loopback port, with a cluster of one fake node; the client's stub for it.
func serveSteps(t *testing.T, steps map[string]Step, creds []grpc.ServerOption, useTLS bool, dial grpc.DialOption) (spb.SagaStepClient, *fakeSagas, *Service) {
	t.Helper()
	sagas := &fakeSagas{states: map[string]string{}}
	node := grpc.NewServer()
	spb.RegisterSagasServer(node, sagas)
	c, err := client.New([]string{listen(t, node)}, client.Options{Insecure: true, CallTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in, err := OpenInbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ServiceID: "shop", ClusterID: "c1", Steps: steps, Log: func(string, map[string]any) {}}
	if useTLS {
		cfg.TLS = &client.TLSFiles{}
	}
	svc := &Service{Inbox: in, Client: c, cfg: cfg, confirming: make(chan struct{}, endConfirmationsMax)}
	t.Cleanup(func() { in.Close(); c.Close() })
	s := grpc.NewServer(creds...)
	spb.RegisterSagaStepServer(s, &stepServer{s: svc})
	cc, err := grpc.Dial(listen(t, s), dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return spb.NewSagaStepClient(cc), sagas, svc
}

func reserveSteps(runs *int) map[string]Step {
	return map[string]Step{"reserve": {
		Action:     func(r Request) (Result, error) { *runs++; return Done("reserved "+r.Input, "reserve"), nil },
		Compensate: func(Request) (Result, error) { *runs++; return Done("", "release"), nil },
	}}
}

func stepReq(cluster, saga string, step uint32, kind, name string) *spb.StepRequest {
	return &spb.StepRequest{ClusterId: cluster, SagaId: saga, Step: step, Key: StepKey(saga, step, kind), Name: name, Input: "2"}
}

func TestTheStepServiceChecksEveryCallAndAnswersARepeatFromItsInbox(t *testing.T) {
	runs := 0
	sc, _, _ := serveSteps(t, reserveSteps(&runs), nil, false, grpc.WithInsecure())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		name string
		req  *spb.StepRequest
		code codes.Code
	}{
		{"another cluster", stepReq("c2", "s1", 0, Action, "reserve"), codes.FailedPrecondition},
		{"no saga id", stepReq("c1", "", 0, Action, "reserve"), codes.InvalidArgument},
		{"a saga id with a slash", &spb.StepRequest{ClusterId: "c1", SagaId: "a/b", Key: "a/b/0/action", Name: "reserve"}, codes.InvalidArgument},
		{"a step beyond the limit", stepReq("c1", "s1", 64, Action, "reserve"), codes.InvalidArgument},
		{"a key of another call", &spb.StepRequest{ClusterId: "c1", SagaId: "s1", Key: "s1/1/action", Name: "reserve"}, codes.InvalidArgument},
		{"the compensation's key on Execute", &spb.StepRequest{ClusterId: "c1", SagaId: "s1", Key: "s1/0/compensate", Name: "reserve"}, codes.InvalidArgument},
		{"no such handler", stepReq("c1", "s1", 0, Action, "ship"), codes.Unimplemented},
	} {
		if _, err := sc.Execute(ctx, c.req); status.Code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if runs != 0 {
		t.Fatalf("a refused call ran its handler (%d runs)", runs)
	}
	for i := 0; i < 2; i++ {
		r, err := sc.Execute(ctx, stepReq("c1", "s1", 0, Action, "reserve"))
		if err != nil || r.Status != spb.StepStatus_STEP_DONE || r.Output != "reserved 2" {
			t.Fatalf("execute %d: %v %v", i, r, err)
		}
	}
	if r, err := sc.Compensate(ctx, stepReq("c1", "s1", 1, Compensate, "reserve")); err != nil || r.Status != spb.StepStatus_STEP_DONE {
		t.Fatalf("an empty compensation: %v %v", r, err)
	}
	if runs != 1 {
		t.Fatalf("runs %d, want 1", runs)
	}
}

func TestEndSagasTakesOnlyTheSagasTheClusterHasEndedInOneConfirmation(t *testing.T) {
	runs := 0
	sc, sagas, svc := serveSteps(t, reserveSteps(&runs), nil, false, grpc.WithInsecure())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := sc.Execute(ctx, stepReq("c1", id, 0, Action, "reserve")); err != nil {
			t.Fatal(err)
		}
	}
	sagas.set("s1", client.SagaFinished)
	sagas.set("s2", client.SagaRunning)
	ack, err := sc.EndSagas(ctx, &spb.SagaEndsRequest{ClusterId: "c1", SagaIds: []string{"s1", "s2", "s3"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ack.Ended, ",") != "s1" || !strings.Contains(ack.Problem, "2 not ended, their keys stay (saga s2 is running on the cluster)") {
		t.Fatalf("ack %v", ack)
	}
	if sagas.statesCalls != 1 {
		t.Fatalf("SagaStates calls %d, want 1 for the batch", sagas.statesCalls)
	}
	if _, ok := svc.Inbox.Get("s2/0/action"); !ok {
		t.Fatal("a saga not ended lost its keys")
	}
	if _, ok := svc.Inbox.Get("s1/0/action"); ok {
		t.Fatal("an ended saga kept its keys")
	}
	// A node from before SagaStates: the ends are confirmed per saga with SagaStatus.
	sagas.mu.Lock()
	sagas.noStates = true
	sagas.mu.Unlock()
	sagas.set("s2", client.SagaCompensated)
	ack, err = sc.EndSagas(ctx, &spb.SagaEndsRequest{ClusterId: "c1", SagaIds: []string{"s1", "s2"}})
	if err != nil || strings.Join(ack.Ended, ",") != "s1,s2" || ack.Problem != "" {
		t.Fatalf("ack %v, %v", ack, err)
	}
	if _, err := sc.EndSagas(ctx, &spb.SagaEndsRequest{ClusterId: "c2", SagaIds: []string{"s1"}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("EndSagas for another cluster: %v", err)
	}
	if _, err := sc.EndSagas(ctx, &spb.SagaEndsRequest{ClusterId: "c1", SagaIds: make([]string, client.SagaIDsPerCallMax+1)}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("EndSagas past the bound: %v", err)
	}
	if _, err := sc.Execute(ctx, stepReq("c1", "s2", 0, Action, "reserve")); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call of an ended saga: %v, want UNAVAILABLE", err)
	}
}

func TestEndIsTakenOnlyOnceTheClusterHasTheSagaEnded(t *testing.T) {
	runs := 0
	sc, sagas, svc := serveSteps(t, reserveSteps(&runs), nil, false, grpc.WithInsecure())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := sc.Execute(ctx, stepReq("c1", "s1", 0, Action, "reserve")); err != nil {
		t.Fatal(err)
	}
	end := &spb.SagaEndRequest{ClusterId: "c1", SagaId: "s1"}
	if _, err := sc.End(ctx, end); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "unknown to the cluster") {
		t.Fatalf("End of a saga the cluster does not know: %v", err)
	}
	sagas.set("s1", client.SagaRunning)
	if _, err := sc.End(ctx, end); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "running on the cluster") {
		t.Fatalf("End of a running saga: %v", err)
	}
	if _, ok := svc.Inbox.Get("s1/0/action"); !ok {
		t.Fatal("a refused End dropped the keys")
	}
	if _, err := sc.End(ctx, &spb.SagaEndRequest{ClusterId: "c2", SagaId: "s1"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("End for another cluster: %v", err)
	}
	sagas.set("s1", client.SagaFinished)
	for i := 0; i < 2; i++ {
		if _, err := sc.End(ctx, end); err != nil {
			t.Fatalf("End %d of a finished saga: %v", i, err)
		}
	}
	if _, err := sc.Execute(ctx, stepReq("c1", "s1", 0, Action, "reserve")); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call of an ended saga: %v, want UNAVAILABLE", err)
	}
	if runs != 1 {
		t.Fatalf("runs %d", runs)
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return &testCA{c, key, pool}
}

func (ca *testCA) issue(t *testing.T, subject pkix.Name, serial int64) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// R8: under TLS, a step's effect is asked for only by a certificate with the node mark of this cluster.
func TestUnderTLSOnlyThisClustersNodesMayCallSteps(t *testing.T) {
	ca := newCA(t)
	server := ca.issue(t, pkix.Name{CommonName: "shop", OrganizationalUnit: []string{"c1"}}, 2)
	creds := grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert}))
	for _, c := range []struct {
		name    string
		subject pkix.Name
		allowed bool
	}{
		{"a node of this cluster", pkix.Name{CommonName: "n1", OrganizationalUnit: []string{"c1"}, Organization: []string{"verdict-node"}}, true},
		{"a client of this cluster", pkix.Name{CommonName: "app", OrganizationalUnit: []string{"c1"}}, false},
		{"a node of another cluster", pkix.Name{CommonName: "n1", OrganizationalUnit: []string{"c2"}, Organization: []string{"verdict-node"}}, false},
	} {
		runs := 0
		caller := ca.issue(t, c.subject, 3)
		dial := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{caller}}))
		sc, _, _ := serveSteps(t, reserveSteps(&runs), []grpc.ServerOption{creds}, true, dial)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := sc.Execute(ctx, stepReq("c1", "s1", 0, Action, "reserve"))
		_, eerr := sc.End(ctx, &spb.SagaEndRequest{ClusterId: "c1", SagaId: "s1"})
		cancel()
		if c.allowed && (err != nil || runs != 1) {
			t.Errorf("%s: refused: %v (runs %d)", c.name, err, runs)
		}
		if !c.allowed && (status.Code(err) != codes.PermissionDenied || status.Code(eerr) != codes.PermissionDenied || runs != 0) {
			t.Errorf("%s: %v / %v (runs %d), want PERMISSION_DENIED", c.name, err, eerr, runs)
		}
	}
}

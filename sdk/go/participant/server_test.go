package participant

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
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	ppb "verdict/sdk/go/pb/participantpb"
)

// serve runs the Participant service of e on a loopback port; the client's connection to it.
func serve(t *testing.T, e *Engine, serverOpts []grpc.ServerOption, nodeOnly bool, dial grpc.DialOption) ppb.ParticipantClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(serverOpts...)
	ppb.RegisterParticipantServer(s, &service{engine: e, nodeOnly: nodeOnly})
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	cc, err := grpc.Dial(lis.Addr().String(), dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return ppb.NewParticipantClient(cc)
}

func TestExchangeAnswersEveryRequestByID(t *testing.T) {
	e, _ := newTestEngine(t, t.TempDir())
	pc := serve(t, e, nil, false, grpc.WithInsecure())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := pc.Exchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prep := func(txn string) *ppb.PrepareRequest {
		return &ppb.PrepareRequest{ClusterId: "c1", TxnId: txn, ParticipantId: "p1", Payload: []byte(`{"set":{"a":1}}`)}
	}
	batch := &ppb.ExchangeBatch{Requests: []*ppb.ExchangeRequest{
		{Id: 1, Body: &ppb.ExchangeRequest_Prepare{Prepare: prep("t1")}},
		{Id: 2, Body: &ppb.ExchangeRequest_Decision{Decision: &ppb.DecideRequest{ClusterId: "c1", TxnId: "t2", ParticipantId: "p1", Decision: ppb.DecisionValue_DECISION_ABORT}}},
		{Id: 3, Body: &ppb.ExchangeRequest_Decision{Decision: &ppb.DecideRequest{ClusterId: "c1", TxnId: "t3", ParticipantId: "p1", Decision: ppb.DecisionValue_DECISION_COMMIT}}},
		{Id: 4},
		{Id: 5, Body: &ppb.ExchangeRequest_Prepare{Prepare: &ppb.PrepareRequest{ClusterId: "other", TxnId: "t4", ParticipantId: "p1"}}},
	}}
	if err := stream.Send(batch); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]*ppb.ExchangeAnswer{}
	for len(got) < len(batch.Requests) {
		b, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range b.Answers {
			got[a.Id] = a
		}
	}
	if got[1].GetVote().GetVote() != ppb.VoteValue_VOTE_YES {
		t.Errorf("1: %v", got[1])
	}
	if got[2].GetAck() == nil {
		t.Errorf("2: an ABORT before PREPARE is ACKed: %v", got[2])
	}
	if got[3].GetError().GetCode() != uint32(codes.FailedPrecondition) {
		t.Errorf("3: COMMIT never prepared: %v", got[3])
	}
	if got[4].GetError().GetCode() != uint32(codes.InvalidArgument) {
		t.Errorf("4: an empty request: %v", got[4])
	}
	if got[5].GetError().GetCode() != uint32(codes.FailedPrecondition) {
		t.Errorf("5: another cluster: %v", got[5])
	}
	// The unary calls mean the same.
	if v, err := pc.Prepare(ctx, prep("t1")); err != nil || v.Vote != ppb.VoteValue_VOTE_YES {
		t.Errorf("a repeated PREPARE: %v %v", v, err)
	}
	if _, err := pc.Decide(ctx, &ppb.DecideRequest{ClusterId: "c1", TxnId: "t1", ParticipantId: "p1"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a decision that is neither: %v", err)
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

// R8: under TLS, PREPARE, DECISION and Status are taken only from a certificate with the node mark of this cluster.
func TestTLSTakesRequestsOnlyFromThisClustersNodes(t *testing.T) {
	ca := newCA(t)
	server := ca.issue(t, pkix.Name{CommonName: "p1", OrganizationalUnit: []string{"c1"}}, 2)
	creds := grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert}))
	for _, c := range []struct {
		name    string
		subject pkix.Name
		allowed bool
	}{
		{"a node of this cluster", pkix.Name{CommonName: "n1", OrganizationalUnit: []string{"c1"}, Organization: []string{"verdict-node"}}, true},
		{"a client of this cluster", pkix.Name{CommonName: "app", OrganizationalUnit: []string{"c1"}}, false},
		{"a node of another cluster", pkix.Name{CommonName: "n1", OrganizationalUnit: []string{"c2"}, Organization: []string{"verdict-node"}}, false},
		{"a CN that spells the mark", pkix.Name{CommonName: "x,O=verdict-node", OrganizationalUnit: []string{"c1"}}, false},
	} {
		e, _ := newTestEngine(t, t.TempDir())
		caller := ca.issue(t, c.subject, 3)
		dial := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{caller}}))
		pc := serve(t, e, []grpc.ServerOption{creds}, true, dial)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := pc.Prepare(ctx, &ppb.PrepareRequest{ClusterId: "c1", TxnId: "t1", ParticipantId: "p1"})
		_, serr := pc.Status(ctx, &ppb.StatusRequest{ClusterId: "c1", TxnId: "t1", ParticipantId: "p1"})
		cancel()
		if c.allowed && (err != nil || serr != nil) {
			t.Errorf("%s: refused: %v %v", c.name, err, serr)
		}
		if !c.allowed && (status.Code(err) != codes.PermissionDenied || status.Code(serr) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "caller's")) {
			t.Errorf("%s: %v %v, want PERMISSION_DENIED", c.name, err, serr)
		}
		if _, ok := e.Journal.Get("t1"); ok != c.allowed {
			t.Errorf("%s: the journal has t1: %v", c.name, ok)
		}
	}
}

// ttlResource is a memory resource whose reserves have the TTLs the test sets, as a TCC resource's would.
type ttlResource struct {
	*MemoryResource
	left map[string]time.Duration
}

func (r *ttlResource) ReserveTTL(txnID string) (time.Duration, bool, error) {
	d, ok := r.left[txnID]
	return d, ok, nil
}

// A YES carries what is left of a TCC reserve's TTL (Vote.reserve_ttl_ms, a duration): over the unary call and the
// Exchange stream; 0 (unknown to the cluster) without one and on a NO; 1 ms once past it and still held.
func TestAYesCarriesTheReserveTTL(t *testing.T) {
	e, m := newTestEngine(t, t.TempDir())
	r := &ttlResource{MemoryResource: m, left: map[string]time.Duration{"t1": 45 * time.Second, "t3": -2 * time.Second, "bad": time.Minute}}
	e.Resource = r
	pc := serve(t, e, nil, false, grpc.WithInsecure())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prep := func(txn, payload string) *ppb.PrepareRequest {
		return &ppb.PrepareRequest{ClusterId: "c1", TxnId: txn, ParticipantId: "p1", Payload: []byte(payload)}
	}
	for _, c := range []struct {
		txn, payload string
		vote         ppb.VoteValue
		ttlMs        uint64
	}{
		{"t1", `{"set":{"a":1}}`, ppb.VoteValue_VOTE_YES, 45_000},
		{"t2", `{"set":{"b":1}}`, ppb.VoteValue_VOTE_YES, 0},
		{"t3", `{"set":{"c":1}}`, ppb.VoteValue_VOTE_YES, 1},
		{"bad", `not json`, ppb.VoteValue_VOTE_NO, 0},
	} {
		v, err := pc.Prepare(ctx, prep(c.txn, c.payload))
		if err != nil || v.Vote != c.vote || v.ReserveTtlMs != c.ttlMs {
			t.Errorf("%s: want %v with %d ms, got %v %v", c.txn, c.vote, c.ttlMs, v, err)
		}
	}
	r.left["t1"] = 31 * 24 * time.Hour // never more than a node takes
	stream, err := pc.Exchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&ppb.ExchangeBatch{Requests: []*ppb.ExchangeRequest{{Id: 1, Body: &ppb.ExchangeRequest_Prepare{Prepare: prep("t1", `{"set":{"a":1}}`)}}}}); err != nil {
		t.Fatal(err)
	}
	b, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Answers[0].GetVote().GetReserveTtlMs(); got != uint64(ReserveTTLMax.Milliseconds()) {
		t.Errorf("a repeated PREPARE over Exchange: %d ms, want %d", got, ReserveTTLMax.Milliseconds())
	}
}

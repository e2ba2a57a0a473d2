package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TLSFiles are PEM files: the cluster CA, and this client's (or participant's) certificate and key signed by it.
type TLSFiles struct {
	CA   string
	Cert string
	Key  string
}

// NodeMark is the subject field value that marks a node's certificate (O=verdict-node, src/transport/tls.ts).
const NodeMark = "verdict-node"

// Load reads the three files: the CA pool and this side's certificate.
func (f TLSFiles) Load() (*x509.CertPool, tls.Certificate, error) {
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, tls.Certificate{}, invalidArgument("TLS ca file %s: %v", f.CA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, tls.Certificate{}, invalidArgument("TLS ca file %s holds no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, tls.Certificate{}, invalidArgument("TLS cert %s / key %s: %v", f.Cert, f.Key, err)
	}
	return pool, cert, nil
}

// LocalClusterTLS is certificate name's files of the local cluster that
// `npm start` (verdict cluster up) makes: $VERDICT_CONFIG_DIR/local, else
// $XDG_CONFIG_HOME/verdict/local, else ~/.config/verdict/local.
func LocalClusterTLS(name string) (TLSFiles, error) {
	var root string
	if d := os.Getenv("VERDICT_CONFIG_DIR"); d != "" {
		root, _ = filepath.Abs(d)
	} else if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		root = filepath.Join(x, "verdict")
	} else {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".config", "verdict")
	}
	d := filepath.Join(root, "local")
	f := TLSFiles{CA: filepath.Join(d, "ca.crt"), Cert: filepath.Join(d, name+".crt"), Key: filepath.Join(d, name+".key")}
	for _, p := range []string{f.CA, f.Cert, f.Key} {
		if _, err := os.Stat(p); err != nil {
			return f, invalidArgument("the local cluster has no %s in %s: `npm start` makes the CA and alice's certificate; another with `npx verdict certs --client %s`", filepath.Base(p), d, name)
		}
	}
	return f, nil
}

// NodeCertificateProblem says why a verified certificate is not a node's of
// clusterID (any cluster when ""): "" when it is one (R8).
func NodeCertificateProblem(c *x509.Certificate, clusterID string) string {
	named := c.Subject.String()
	if len(named) > 200 {
		named = named[:200]
	}
	if clusterID != "" && (len(c.Subject.OrganizationalUnit) != 1 || c.Subject.OrganizationalUnit[0] != clusterID) {
		return fmt.Sprintf("certificate (%s) is not of cluster %q (OU=%s)", named, clusterID, clusterID)
	}
	if len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != NodeMark {
		return fmt.Sprintf("certificate (%s) is not a node's: it lacks the node mark O=%s (a participant's or a client's certificate at a node's address)", named, NodeMark)
	}
	return ""
}

// nodeTLSConfig is the client side of mutual TLS to the nodes: the server's
// certificate is checked against the CA and the address, and must carry the
// node mark (and OU=cluster when known) on every handshake, reconnections
// included, so whatever answers at an address later is checked as well.
func nodeTLSConfig(files TLSFiles, clusterID func() string) (*tls.Config, error) {
	pool, cert, err := files.Load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("the server at %s showed no certificate", cs.ServerName)
			}
			if p := NodeCertificateProblem(cs.PeerCertificates[0], clusterID()); p != "" {
				return fmt.Errorf("%s: %s", cs.ServerName, p)
			}
			return nil
		},
	}, nil
}

func isAddress(a string) bool {
	i := strings.LastIndexByte(a, ':')
	if i <= 0 || i == len(a)-1 || len(a)-i-1 > 5 || strings.ContainsAny(a, " \t\n") {
		return false
	}
	for _, ch := range a[i+1:] {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	secretA = []byte("cluster secret A, at least 16 bytes")
	secretB = []byte("cluster secret B, at least 16 bytes")
)

func mustCA(t *testing.T, secret []byte) *CA {
	t.Helper()
	ca, err := NewCA(secret)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func mustCert(t *testing.T, ca *CA, node string) *Cert {
	t.Helper()
	c, err := ca.NodeCert(node, []string{"127.0.0.1", "node.test"})
	if err != nil {
		t.Fatalf("NodeCert: %v", err)
	}
	return c
}

// TestCADerivation: the CA is a function of the secret.
func TestCADerivation(t *testing.T) {
	a1, a2, b := mustCA(t, secretA), mustCA(t, secretA), mustCA(t, secretB)
	if !bytes.Equal(a1.cert.Raw, a2.cert.Raw) {
		t.Errorf("two CAs from one secret differ")
	}
	if bytes.Equal(a1.cert.Raw, b.cert.Raw) || a1.cert.Subject.CommonName == b.cert.Subject.CommonName {
		t.Errorf("CAs from two secrets are alike: %q, %q", a1.cert.Subject.CommonName, b.cert.Subject.CommonName)
	}
	if _, err := NewCA(make([]byte, MinSecretLen-1)); err == nil {
		t.Errorf("NewCA accepted a %d-byte secret", MinSecretLen-1)
	}
}

// handshake runs a TLS handshake between server and client over loopback
// TCP and returns the client's connection state and each side's error.
func handshake(t *testing.T, server, client *tls.Config) (state tls.ConnectionState, serr, cerr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second) // a bound, should the handshake hang
	var wg sync.WaitGroup
	wg.Go(func() {
		sc, err := ln.Accept()
		if err != nil {
			serr = err
			return
		}
		defer sc.Close()
		_ = sc.SetDeadline(deadline)
		s := tls.Server(sc, server)
		serr = s.HandshakeContext(t.Context())
		// In TLS 1.3 the client finishes before the server has checked its
		// certificate: the client's read waits for the server's verdict.
		if serr == nil {
			_, serr = s.Write([]byte{1})
		}
	})
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = cc.SetDeadline(deadline)
	c := tls.Client(cc, client)
	cerr = c.HandshakeContext(t.Context())
	if cerr == nil {
		var b [1]byte
		_, cerr = c.Read(b[:])
		state = c.ConnectionState()
	}
	c.Close()
	wg.Wait()
	return state, serr, cerr
}

func TestMutualTLS(t *testing.T) {
	// Two nodes with the same secret derive their CAs independently.
	n1, n2 := mustCert(t, mustCA(t, secretA), "n1"), mustCert(t, mustCA(t, secretA), "n2")
	foreign := mustCert(t, mustCA(t, secretB), "intruder")

	t.Run("same secret", func(t *testing.T) {
		st, serr, cerr := handshake(t, n1.ServerTLS(), n2.ClientTLS("127.0.0.1"))
		if serr != nil || cerr != nil {
			t.Fatalf("handshake: server %v, client %v", serr, cerr)
		}
		if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "h2" {
			t.Errorf("negotiated version %x, protocol %q, want TLS 1.3 and h2", st.Version, st.NegotiatedProtocol)
		}
		if len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != "n1" {
			t.Errorf("peer certificate is not n1's")
		}
	})
	t.Run("server from another secret", func(t *testing.T) {
		_, _, cerr := handshake(t, foreign.ServerTLS(), n1.ClientTLS("127.0.0.1"))
		if _, ok := errors.AsType[x509.UnknownAuthorityError](cerr); !ok {
			t.Errorf("client handshake with a server of another CA: %v, want x509.UnknownAuthorityError", cerr)
		}
	})
	t.Run("client from another secret", func(t *testing.T) {
		cfg := foreign.ClientTLS("127.0.0.1")
		cfg.RootCAs = n1.ca.pool // it trusts our server, but is not trusted
		// NB: a Go client sends only a certificate the server's request
		// names an issuer of; a hostile one sends it anyway.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign.leaf, nil }
		_, serr, _ := handshake(t, n1.ServerTLS(), cfg)
		if _, ok := errors.AsType[x509.UnknownAuthorityError](serr); !ok {
			t.Errorf("server handshake with a client of another CA: %v, want x509.UnknownAuthorityError", serr)
		}
	})
	t.Run("client without certificate", func(t *testing.T) {
		cfg := n2.ClientTLS("127.0.0.1")
		cfg.Certificates = nil
		if _, serr, _ := handshake(t, n1.ServerTLS(), cfg); serr == nil {
			t.Errorf("server accepted a client without a certificate")
		}
	})
	t.Run("name not in the certificate", func(t *testing.T) {
		_, _, cerr := handshake(t, n1.ServerTLS(), n2.ClientTLS("10.9.9.9"))
		if _, ok := errors.AsType[x509.HostnameError](cerr); !ok {
			t.Errorf("client handshake naming another host: %v, want x509.HostnameError", cerr)
		}
	})
}

func TestWriteFiles(t *testing.T) {
	c := mustCert(t, mustCA(t, secretA), "n1")
	dir := filepath.Join(t.TempDir(), "tls")
	// Twice: the second replaces the first's files.
	for range 2 {
		f, err := c.WriteFiles(dir)
		if err != nil {
			t.Fatalf("WriteFiles: %v", err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("directory mode %v (%v), want 0700", fi.Mode().Perm(), err)
		}
		for _, p := range []string{f.CA, f.Cert, f.Key} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
			}
		}
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatalf("LoadX509KeyPair: %v", err)
		}
		caPEM, err := os.ReadFile(f.CA)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(caPEM)
		ca, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node.test"}); err != nil {
			t.Errorf("the written certificate does not verify under the written CA: %v", err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%s holds %d files, want 3 (no temporary files left)", dir, len(ents))
	}
}

// TestExplainTLS: a handshake with a node of another cluster secret fails
// with an error that says so.
func TestExplainTLS(t *testing.T) {
	a, b := mustCert(t, mustCA(t, secretA), "a"), mustCert(t, mustCA(t, secretB), "b")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", a.ServerTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	_, err = tls.Dial("tcp", ln.Addr().String(), b.ClientTLS("127.0.0.1"))
	if err == nil {
		t.Fatal("a node of another secret completed the handshake")
	}
	if got := explainTLS(err).Error(); !strings.Contains(got, "--cluster-secret") {
		t.Errorf("explained: %q, want it to name --cluster-secret", got)
	}
	if plain := errors.New("connection refused"); explainTLS(plain) != plain {
		t.Error("another error was changed")
	}
	// The same CA, another name (a host name and its IP address listed
	// as two members): not another secret.
	_, err = tls.Dial("tcp", ln.Addr().String(), mustCert(t, mustCA(t, secretA), "c").ClientTLS("localhost"))
	if err == nil {
		t.Fatal("a handshake for a name the certificate lacks completed")
	}
	if got := explainTLS(err).Error(); strings.Contains(got, "--cluster-secret") || !strings.Contains(got, "different members") {
		t.Errorf("explained: %q, want it to say the certificate names another host, not another secret", got)
	}
}

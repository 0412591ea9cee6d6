package server

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/partitadb/partita/internal/config"
)

// TestCertAfterCrash: the empty cert.pem that a crash during an older
// release's first start left (it wrote the file in place) is made again,
// where every later start failed ("failed to find any PEM data"; a bug
// hunt); and a certificate made once is kept across starts.
func TestCertAfterCrash(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls", "cert.pem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, first, _, err := loadOrCreateCert(config.Server{}, dir)
	if err != nil {
		t.Fatalf("start after a crash left an empty cert.pem: %v", err)
	}
	_, again, _, err := loadOrCreateCert(config.Server{}, dir)
	if err != nil || string(again) != string(first) {
		t.Errorf("second start: %v, certificate kept %v", err, string(again) == string(first))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "tls", "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestCertCoversAddr: the generated certificate covers the host the API
// listens on, so that a client on another machine can verify the address
// it connects to (a member of a cluster on three machines answered
// 10.200.0.1 with a certificate for localhost alone); a later start on
// another address keeps it (a client trusts exactly the certificate it
// was given) and reports the names it lacks, for the server's warning.
func TestCertCoversAddr(t *testing.T) {
	dir := t.TempDir()
	_, first, missing, err := loadOrCreateCert(config.Server{Addr: "10.1.2.3:8081"}, dir)
	if err != nil || len(missing) != 0 {
		t.Fatalf("first start: %v, missing %v", err, missing)
	}
	for _, h := range []string{"10.1.2.3", "localhost", "127.0.0.1", "::1"} {
		if err := parsePEM(t, first).VerifyHostname(h); err != nil {
			t.Errorf("generated certificate: %v", err)
		}
	}

	_, second, missing, err := loadOrCreateCert(config.Server{Addr: "db.example.test:8081", ComputeGatewayAddr: "10.9.9.9:8903"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db.example.test", "10.9.9.9"}; !slices.Equal(missing, want) || string(second) != string(first) {
		t.Errorf("another address: missing %v (want %v), certificate kept %v", missing, want, string(second) == string(first))
	}
	if _, _, missing, err := loadOrCreateCert(config.Server{Addr: "127.0.0.1:8081"}, dir); err != nil || len(missing) != 0 {
		t.Errorf("loopback: %v, missing %v", err, missing)
	}

	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	_, any, _, err := loadOrCreateCert(config.Server{Addr: "0.0.0.0:8081"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := parsePEM(t, any).VerifyHostname(host); err != nil {
		t.Errorf("listening on every address: %v", err)
	}
	// A name given: it and the addresses it resolves to.
	_, named, _, err := loadOrCreateCert(config.Server{Addr: net.JoinHostPort(host, "8081")}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{host}
	if as, err := net.LookupIP(host); err == nil {
		for _, a := range as {
			names = append(names, a.String())
		}
	}
	for _, h := range names {
		if err := parsePEM(t, named).VerifyHostname(h); err != nil {
			t.Errorf("the host name: %v", err)
		}
	}
}

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

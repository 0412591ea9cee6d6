package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/config"
)

// loadOrCreateCert returns the configured certificate, or the self-signed one
// kept in dataDir/tls, generating it on first start. The generated
// certificate covers localhost, 127.0.0.1 and ::1, as the SDKs' emulator
// settings expect, and the hosts the API listens on (certNames), so that a
// client on another machine that trusts it can verify the address it
// connects to. For a generated certificate made before (by an older
// release, or before --addr changed), missing reports the names it does
// not cover; the caller warns, naming the remedy.
func loadOrCreateCert(c config.Server, dataDir string) (cert tls.Certificate, certPEM []byte, missing []string, err error) {
	certFile, keyFile := c.TLSCert, c.TLSKey
	if certFile == "" {
		dir := filepath.Join(dataDir, "tls")
		certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		dns, ips := certNames(c)
		// An empty file is what a crash during an older release's first
		// start left (written in place): no client can trust it, so it is
		// made again. This release writes each file whole or not at all.
		if fi, err := os.Stat(certFile); errors.Is(err, fs.ErrNotExist) || err == nil && fi.Size() == 0 {
			if err := generateCert(dir, certFile, keyFile, dns, ips); err != nil {
				return tls.Certificate{}, nil, nil, fmt.Errorf("generate TLS certificate: %w", err)
			}
		} else {
			missing = missingNames(certFile, dns, ips)
		}
	}
	cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	certPEM, err = os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	return cert, certPEM, missing, nil
}

// certNames returns the names a generated certificate covers: localhost,
// 127.0.0.1 and ::1, and the host of each API listen address (Addr,
// ComputeGatewayAddr) — an IP, or a name and the addresses it resolves to, or, for an unspecified
// one (0.0.0.0, ::, no host), this machine's host name and its interfaces'
// addresses, any of which a client may connect to.
func certNames(c config.Server) (dns []string, ips []net.IP) {
	dns = []string{"localhost"}
	ips = []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	addIP := func(ip net.IP) {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		if !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	addName := func(h string) {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if h != "" && !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	for _, addr := range []string{c.Addr, c.ComputeGatewayAddr} {
		if addr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			continue // config validation names it
		}
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
			addIP(ip)
			continue
		} else if ip == nil && host != "" {
			// A name, and the addresses it resolves to here: clients
			// may use either.
			addName(host)
			if as, err := net.LookupIP(host); err == nil {
				for _, a := range as {
					addIP(a)
				}
			}
			continue
		}
		if h, err := os.Hostname(); err == nil {
			addName(h)
		}
		if as, err := net.InterfaceAddrs(); err == nil {
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
					addIP(n.IP)
				}
			}
		}
	}
	return dns, ips
}

// missingNames returns the names of dns and ips that the certificate in
// certFile does not cover. It is not issued again for them: a client that
// trusts a self-signed certificate trusts exactly that one (OpenSSL's
// clients, Node's and Python's among them, refused one issued again with
// the same key and name), so the operator decides (loadOrCreateCert).
func missingNames(certFile string, dns []string, ips []net.IP) []string {
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil // loadOrCreateCert reports it
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil
	}
	var missing []string
	for _, h := range dns {
		if !slices.Contains(c.DNSNames, h) {
			missing = append(missing, h)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			missing = append(missing, ip.String())
		}
	}
	return missing
}

func generateCert(dir, certFile, keyFile string, dns []string, ips []net.IP) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"Partita"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: clients trust it directly (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS)
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The key first, the certificate last: a certificate in place means
	// both are whole (writeWhole), whenever the process stops.
	if err := writeWhole(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return writeCert(certFile, tmpl, key)
}

// writeCert signs tmpl with key as a self-signed certificate and writes
// it to certFile whole (writeWhole).
func writeCert(certFile string, tmpl *x509.Certificate, key *ecdsa.PrivateKey) error {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	return writeWhole(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeWhole writes data to name so that name holds all of it or what it
// held before, whenever the process or the machine stops: a temporary file
// beside it, synced, renamed over it, the directory synced.
func writeWhole(name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

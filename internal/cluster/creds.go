package cluster

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// MinSecretLen is the shortest cluster secret NewCA accepts, in bytes.
const MinSecretLen = 16

// caInfo is HKDF's context for the CA key: another derivation from the same
// secret (with another info) yields an unrelated key. v1 is its version.
const caInfo = "partita cluster CA ed25519 v1"

// caValidity is the CA certificate's fixed validity: fixed so that every
// node derives the same certificate, and wide because the CA's authority
// is the secret, not the dates.
var (
	caNotBefore = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	caNotAfter  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// nodeCertValidity is how long a node certificate is valid; a node issues
// a fresh one at every start. nodeCertBackdate absorbs clock skew between
// nodes.
const (
	nodeCertValidity = 10 * 365 * 24 * time.Hour
	nodeCertBackdate = time.Hour
)

// CA is the cluster's certificate authority. Its Ed25519 key is derived
// from the cluster secret with HKDF-SHA256, so every node holding the
// secret derives the same CA, and nothing else needs to be distributed. It
// is safe for concurrent use.
type CA struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
	pool *x509.CertPool
}

// NewCA derives the CA from secret, which must be at least MinSecretLen
// bytes. The CA certificate is self-signed with a fixed serial, subject and
// validity, so two nodes derive identical certificates.
func NewCA(secret []byte) (*CA, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("cluster: the cluster secret must be at least %d bytes", MinSecretLen)
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, caInfo, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("cluster: derive CA key: %w", err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	fp := sha256.Sum256(pub)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		// The fingerprint of the public key tells operators which secret
		// a node runs with, without revealing it.
		Subject:               pkix.Name{CommonName: "partita cluster CA " + hex.EncodeToString(fp[:4])},
		NotBefore:             caNotBefore,
		NotAfter:              caNotAfter,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	// NB: Ed25519 signatures are deterministic; rand is not used.
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("cluster: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("cluster: CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{key: key, cert: cert, pool: pool}, nil
}

// Cert is a node's certificate and key, issued by a CA, with the TLS
// configurations built on them. It is safe for concurrent use.
type Cert struct {
	ca   *CA
	leaf tls.Certificate
	key  ed25519.PrivateKey
}

// NodeCert issues a fresh node certificate: a new Ed25519 key, signed by
// the CA, for node (its subject's common name), valid for TLS servers and
// clients, with hosts (host names or IP addresses; those of the node's
// cluster address) and 127.0.0.1 as subject alternative names.
func (ca *CA) NodeCert(node string, hosts []string) (*Cert, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("cluster: node key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("cluster: node certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node},
		NotBefore:    now.Add(-nodeCertBackdate),
		NotAfter:     now.Add(nodeCertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Both: a node is a server to its peers and their client, and
		// etcd uses one certificate for both directions.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			if ip := net.IP(ip.Unmap().AsSlice()); !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("cluster: node certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("cluster: node certificate: %w", err)
	}
	return &Cert{
		ca:   ca,
		leaf: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		key:  key,
	}, nil
}

// ServerTLS returns a server configuration that presents the node's
// certificate and requires a client certificate chaining to the CA: TLS
// 1.3 only, ALPN h2. Each call returns a new configuration.
func (c *Cert) ServerTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.leaf},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.ca.pool,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"h2"},
	}
}

// ClientTLS returns a client configuration that presents the node's
// certificate and accepts only a server certificate that chains to the CA
// and names serverName (a host name or IP address; empty lets an HTTP
// transport fill in the URL's host): TLS 1.3 only, ALPN h2. Each call
// returns a new configuration.
func (c *Cert) ClientTLS(serverName string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.leaf},
		RootCAs:      c.ca.pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"h2"},
	}
}

// CertFiles are the paths of a node's credentials in PEM, for etcd, which
// takes files.
type CertFiles struct {
	CA   string // the CA certificate
	Cert string // the node certificate
	Key  string // the node's private key (PKCS #8)
}

// WriteFiles writes the CA certificate, the node certificate and its key
// into dir as ca.pem, node.pem and node-key.pem, each replaced atomically
// with mode 0600, and returns their paths. It creates dir with mode 0700
// (and sets that mode if dir exists).
func (c *Cert) WriteFiles(dir string) (CertFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return CertFiles{}, fmt.Errorf("cluster: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return CertFiles{}, fmt.Errorf("cluster: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return CertFiles{}, fmt.Errorf("cluster: node key: %w", err)
	}
	f := CertFiles{
		CA:   filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, "node.pem"),
		Key:  filepath.Join(dir, "node-key.pem"),
	}
	for _, w := range []struct {
		path, typ string
		der       []byte
	}{
		{f.CA, "CERTIFICATE", c.ca.cert.Raw},
		{f.Cert, "CERTIFICATE", c.leaf.Leaf.Raw},
		{f.Key, "PRIVATE KEY", keyDER},
	} {
		if err := writeFileAtomic(w.path, pem.EncodeToMemory(&pem.Block{Type: w.typ, Bytes: w.der})); err != nil {
			return CertFiles{}, fmt.Errorf("cluster: %w", err)
		}
	}
	return f, nil
}

// writeFileAtomic replaces path by data, with mode 0600: written to a
// temporary file in the same directory, synced, then renamed.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	// CreateTemp makes the file with mode 0600.
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

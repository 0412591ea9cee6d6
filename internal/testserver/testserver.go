// Package testserver runs the real Partita server (the same server.Open and
// Run as `partita serve`) in-process on 127.0.0.1:0 with TLS, for tests, and
// hands out clients of the official Go SDK (azcosmos) that trust its
// certificate. StartFloor runs the floor server (package floor) the same
// way, for benchmarks that compare with it. Import it from tests only.
package testserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/server"
	"github.com/partitadb/partita/internal/store"
)

// Options configure Start.
type Options struct {
	// DataDir is the data directory; empty means a new t.TempDir().
	DataDir string
	// Configure, if set, adjusts the configuration before the server opens.
	Configure func(*config.Config)
	// Now, if set, is the server's clock (default time.Now). A frozen clock
	// makes each partition's throughput budget a fixed number of request
	// units: its one-second bucket never refills.
	Now func() time.Time
	// Store, if set, adjusts the store's options before it opens: a test
	// gives it a filesystem that runs out of space (storetest.FullFS).
	Store func(*store.Options)
}

// Server is a running test server.
type Server struct {
	Endpoint string // e.g. https://127.0.0.1:40123/
	Key      string // master key
	DataDir  string
	CertPEM  []byte
	// MetricsURL is the Prometheus endpoint, e.g. http://127.0.0.1:40124/metrics,
	// when Configure set Server.MetricsAddr (use port 0); empty otherwise.
	MetricsURL string

	clientOnce sync.Once
	client     *http.Client
	stopOnce   sync.Once
	cancel     context.CancelFunc
	done       chan error // receives Run's result once
}

// Start runs a server for the duration of the test (stopped in t.Cleanup).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts, false)
}

// StartFloor runs the floor server (server.OpenFloor: the same listener,
// TLS and authentication, answering from memory) for the duration of the
// test, configured as Start configures the real one; opts.Now and
// opts.Store do not apply. Benchmarks run a workload against both and
// compare.
func StartFloor(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts, true)
}

func start(t testing.TB, opts Options, floor bool) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Store.Dir = opts.DataDir
	if cfg.Store.Dir == "" {
		cfg.Store.Dir = t.TempDir()
	}
	cfg.Logging.Level = "warn"
	// Tests that are not about throttling must not be throttled: they set
	// "on" in Configure when they are.
	cfg.Engine.RateLimit = "off"
	// A 128 MiB ballast per test server would only cost time and disk:
	// the full-disk tests set their own.
	cfg.Store.BallastBytes = 0
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		srv *server.Server
		err error
	)
	if floor {
		srv, err = server.OpenFloor(cfg, nil)
	} else {
		srv, err = server.OpenWith(ctx, cfg, nil, server.Hooks{Store: opts.Store, Now: opts.Now})
	}
	if err != nil {
		cancel()
		t.Fatalf("testserver: open: %v", err)
	}
	s := &Server{Endpoint: srv.Endpoint(), Key: cfg.Auth.Key, DataDir: cfg.Store.Dir, CertPEM: srv.CertPEM(),
		cancel: cancel, done: make(chan error, 1)}
	if a := srv.MetricsAddr(); a != nil {
		s.MetricsURL = "http://" + a.String() + "/metrics"
	}
	go func() { s.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("testserver: stop: %v", err)
		}
	})
	return s
}

// Stop shuts the server down gracefully and waits for it; later calls
// return nil.
func (s *Server) Stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.cancel()
		err = <-s.done
	})
	return err
}

// HTTPClient returns the server's HTTP client, which trusts its certificate
// and keeps connections alive across requests.
func (s *Server) HTTPClient() *http.Client {
	s.clientOnce.Do(func() {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.CertPEM)
		s.client = &http.Client{
			Timeout:   60 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true},
		}
	})
	return s.client
}

// Client returns an azcosmos client for the server, authenticated with the
// master key.
func (s *Server) Client(t testing.TB) *azcosmos.Client {
	t.Helper()
	return s.ClientWithKey(t, s.Key)
}

// ClientWithKey returns an azcosmos client authenticated with key. It does
// not retry throttled requests, so tests see every status.
func (s *Server) ClientWithKey(t testing.TB, key string) *azcosmos.Client {
	t.Helper()
	return s.clientWith(t, key, policy.RetryOptions{MaxRetries: -1})
}

// RetryingClient returns an azcosmos client that retries throttled (429)
// requests up to retries times, waiting the retry-after the server sends,
// as applications configure it.
func (s *Server) RetryingClient(t testing.TB, retries int32) *azcosmos.Client {
	t.Helper()
	return s.clientWith(t, s.Key, policy.RetryOptions{MaxRetries: retries, MaxRetryDelay: 10 * time.Second})
}

func (s *Server) clientWith(t testing.TB, key string, retry policy.RetryOptions) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(key)
	if err != nil {
		t.Fatalf("testserver: key: %v", err)
	}
	c, err := azcosmos.NewClientWithKey(s.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: s.HTTPClient(),
		Retry:     retry,
	}})
	if err != nil {
		t.Fatalf("testserver: client: %v", err)
	}
	return c
}

// TokenClient returns an azcosmos client that authenticates with cred, as
// azcosmos.NewClient does for Microsoft Entra ID: each request carries
// "type=aad&ver=1.0&sig=<token>". It does not retry throttled requests.
func (s *Server) TokenClient(t testing.TB, cred azcore.TokenCredential) *azcosmos.Client {
	t.Helper()
	c, err := azcosmos.NewClient(s.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: s.HTTPClient(),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatalf("testserver: client: %v", err)
	}
	return c
}

// Scrape GETs MetricsURL over plain HTTP, as Prometheus does, on a new
// connection, and returns the response and its body.
func (s *Server) Scrape(ctx context.Context) (*http.Response, []byte, error) {
	if s.MetricsURL == "" {
		return nil, nil, fmt.Errorf("testserver: no metrics listener (set Server.MetricsAddr)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.MetricsURL, nil)
	if err != nil {
		return nil, nil, err
	}
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	return resp, data, nil
}

// Do sends a raw request signed with the master key, for protocol details
// the SDK does not expose (such as reading one pk range's feed). path is the
// URL path, e.g. "/dbs/db/colls/c/docs"; headers are added as given, after
// the signature, so an "Authorization" entry replaces it.
func (s *Server) Do(ctx context.Context, method, path string, headers map[string]string, body []byte) (*http.Response, []byte, error) {
	return s.DoWithKey(ctx, s.Key, method, path, headers, body)
}

// DoWithKey is Do signed with key (base64), e.g. a read-only key.
func (s *Server) DoWithKey(ctx context.Context, key64, method, path string, headers map[string]string, body []byte) (*http.Response, []byte, error) {
	u := strings.TrimSuffix(s.Endpoint, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	key, err := auth.DecodeKey(key64)
	if err != nil {
		return nil, nil, err
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, nil, err
	}
	typ, link, err := auth.Resource(parsed.EscapedPath())
	if err != nil {
		return nil, nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", auth.MasterToken(key, method, typ, link, date))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	return resp, data, nil
}

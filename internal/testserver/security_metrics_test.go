package testserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// TestMetricsListener: Prometheus metrics are served only on --metrics-addr, over plain
// HTTP and without authentication; on the API listener /metrics is an ordinary path that
// needs a signature like every other (before the fix it answered anyone).
func TestMetricsListener(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Server.MetricsAddr = "127.0.0.1:0" }})
	newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}}, nil)
	const metric = `partita_container_physical_partitions{container="c",db="db"} 1`

	// The API listener: no key, 401; with the master key, no metrics either.
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.Endpoint+"metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body.String(), "partita_") {
		t.Errorf("GET /metrics on the API port without a key: %d %.300s, want 401 and no metrics", resp.StatusCode, body.String())
	}
	resp, data, err := s.Do(t.Context(), "GET", "/metrics", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK || strings.Contains(string(data), "partita_") {
		t.Errorf("GET /metrics on the API port with the master key: %d %.300s, want a refusal and no metrics", resp.StatusCode, data)
	}

	// The metrics listener: plain HTTP, no key.
	resp, data, err = s.Scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), metric) || !strings.Contains(string(data), "go_goroutines") {
		t.Errorf("GET %s: %d, want 200 with %s and Go runtime metrics:\n%.2000s", s.MetricsURL, resp.StatusCode, metric, data)
	}
	// It serves nothing else.
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, r := range []struct{ method, path string }{{"POST", "/metrics"}, {"GET", "/"}, {"GET", "/dbs"}} {
		req, err := http.NewRequestWithContext(t.Context(), r.method, strings.TrimSuffix(s.MetricsURL, "/metrics")+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s on the metrics listener: %d, want 404 or 405", r.method, r.path, resp.StatusCode)
		}
	}

	// The listener is part of the server's lifecycle: it closes on shutdown.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Scrape(t.Context()); err == nil {
		t.Errorf("GET %s after shutdown succeeded", s.MetricsURL)
	}
}

// TestNoMetricsListenerByDefault: without --metrics-addr there is no metrics listener.
func TestNoMetricsListenerByDefault(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	if s.MetricsURL != "" {
		t.Errorf("MetricsURL = %q, want none by default", s.MetricsURL)
	}
}

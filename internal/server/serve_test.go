package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/config"
)

// TestShutdownWithPreconnect: a connection that negotiated HTTP/2 and sent
// nothing since (a browser's preconnect) does not hold a graceful shutdown
// to its timeout, which then failed (the Data Explorer's browser test under
// load: "context deadline exceeded" stopping the server); a request in its
// handler still finishes before the listener stops.
func TestShutdownWithPreconnect(t *testing.T) {
	cert, _, err := loadOrCreateCert(config.Server{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	srv := &http.Server{
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
			w.WriteHeader(http.StatusNoContent)
		}),
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, srv, ln, 5*time.Second) }()

	// The preconnect: TLS with h2 agreed, then silence.
	pre, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Close()
	if p := pre.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	// A request in its handler when the shutdown starts.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	status := make(chan int, 1)
	go func() {
		resp, err := client.Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-started
	cancel()
	time.Sleep(2 * quietBeforeClose) // the request is still in its handler
	close(release)
	if code := <-status; code != http.StatusNoContent {
		t.Errorf("the request in flight at shutdown got %d, want 204", code)
	}
	if err := <-errc; err != nil {
		t.Fatalf("serve = %v, want a clean shutdown", err)
	}
}

package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/store"
)

// TestAnswersWhileStarting: while Open runs, the API's port answers every
// request with a Cosmos DB 503 saying the node is starting (it refused
// connections: a cluster member waiting for its peers kept it closed for
// as long as it waited), over HTTP/1.1 (each answer closing its
// connection) and HTTP/2 alike; once Open has returned, a new connection
// is always the real server's, never answered 503.
func TestAnswersWhileStarting(t *testing.T) {
	for round := range 3 {
		cfg := config.Default()
		cfg.Server.Addr = "127.0.0.1:0"
		cfg.Store.Dir = t.TempDir()
		addrc := make(chan net.Addr, 1)
		release := make(chan struct{})
		hooks := Hooks{
			Listening: func(a net.Addr) { addrc <- a },
			Store:     func(*store.Options) { <-release },
		}
		type opened struct {
			s   *Server
			err error
		}
		openc := make(chan opened, 1)
		go func() {
			s, err := OpenWith(t.Context(), cfg, nil, hooks)
			openc <- opened{s, err}
		}()
		url := "https://" + (<-addrc).String() + "/"
		h1 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		h2 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
		if round == 0 {
			for _, c := range []*http.Client{h1, h2} {
				resp, err := c.Get(url + "dbs")
				if err != nil {
					t.Fatalf("a request while the server opens: %v, want an answer", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var e struct{ Code, Message string }
				_ = json.Unmarshal(body, &e)
				if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "ServiceUnavailable" || !strings.Contains(e.Message, "is starting") {
					t.Errorf("%s while the server opens: %d %s; want 503 ServiceUnavailable saying it is starting", resp.Proto, resp.StatusCode, body)
				}
				if resp.ProtoMajor == 1 && !resp.Close {
					t.Errorf("HTTP/1.1 answer while starting keeps its connection open; want Connection: close")
				}
				if got := resp.Header.Get("x-ms-activity-id"); got == "" {
					t.Errorf("%s answer while starting has no x-ms-activity-id", resp.Proto)
				}
			}
		}
		// Connections made while it starts, whose requests come only
		// after Open returned: each is answered (the starting server's
		// 503), not dropped (a review: EOF, as Shutdown drops a request it
		// reads once begun).
		var early []*tls.Conn
		for range 3 {
			c, err := tls.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			early = append(early, c)
		}
		close(release)
		o := <-openc
		if o.err != nil {
			t.Fatal(o.err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		runc := make(chan error, 1)
		go func() { runc <- o.s.Run(ctx) }()
		time.Sleep(100 * time.Millisecond)
		for i, c := range early {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, "GET /dbs HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatalf("round %d: early connection %d: write: %v", round, i, err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("round %d: early connection %d, request sent after Open returned: %v, want an answer", round, i, err)
			}
			resp.Body.Close()
		}
		// New connections from here on: the real server (401: unsigned).
		for i := range 20 {
			fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
			resp, err := fresh.Get(url + "dbs")
			if err != nil {
				t.Fatalf("round %d, request %d after Open returned: %v", round, i, err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				t.Fatalf("round %d, request %d on a new connection after Open returned: 503 (the starting answer)", round, i)
			}
		}
		cancel()
		select {
		case err := <-runc:
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return 30 s after its context ended")
		}
		h1.CloseIdleConnections()
		h2.CloseIdleConnections()
	}
}

// TestListenersBoundFirst: a compute-gateway or metrics address in use is
// refused before the store opens (a review: a cluster member found it only
// after its wait for the others, then left the peer it had just joined),
// and the other listeners are released.
func TestListenersBoundFirst(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, which := range []string{"compute", "metrics"} {
		cfg := config.Default()
		cfg.Server.Addr = "127.0.0.1:0"
		cfg.Store.Dir = t.TempDir()
		if which == "compute" {
			cfg.Server.ComputeGatewayAddr = held.Addr().String()
		} else {
			cfg.Server.MetricsAddr = held.Addr().String()
		}
		var api net.Addr
		opened := false
		_, err := OpenWith(t.Context(), cfg, nil, Hooks{Listening: func(a net.Addr) { api = a }, Store: func(*store.Options) { opened = true }})
		if err == nil || !strings.Contains(err.Error(), held.Addr().String()) {
			t.Fatalf("%s address in use: %v, want an error naming it", which, err)
		}
		if opened {
			t.Errorf("%s address in use: the store was opened first", which)
		}
		if api != nil {
			t.Errorf("%s address in use: the API listener was handed out", which)
		}
	}
	// The API's own port is free again after a failure.
	cfg := config.Default()
	cfg.Store.Dir = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Addr = ln.Addr().String()
	ln.Close()
	cfg.Server.MetricsAddr = held.Addr().String()
	if _, err := OpenWith(t.Context(), cfg, nil, Hooks{}); err == nil {
		t.Fatal("metrics address in use: opened")
	}
	if again, err := net.Listen("tcp", cfg.Server.Addr); err != nil {
		t.Errorf("the API address after a failed open: %v, want it released", err)
	} else {
		again.Close()
	}
}

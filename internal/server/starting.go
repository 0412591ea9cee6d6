package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/drain"
)

// starting answers on one of the server's listeners (the API's, the
// compute gateway's, the metrics') while the server opens: every request
// gets a Cosmos DB 503 saying the node is starting. A cluster
// member restarted while most of the others are down waits for them
// (cluster.NodeConfig.StartTimeout, by default until it is stopped), and
// a client meeting a closed port then learns nothing ("connection
// refused", which the SDKs report as a network failure) where a 503 says
// what is happening.
//
// It serves a duplicate of the listener's socket (net.FileListener), so
// that stopping it closes only the duplicate: the socket stays bound, and
// the connections it queues meanwhile are the real server's, which serves
// the original once Open returns. end stops accepting before it returns,
// so a connection made after Open returned is never answered 503. The
// connections accepted before then are each answered: an HTTP/1.1 one
// closes after its one answer (Connection: close), and Shutdown, which
// drops unanswered any request it reads once it has begun, waits until
// they have closed or startingDrain has passed (package drain: a client
// that connected as the server became ready got EOF for the request it
// sent next, a review found); an HTTP/2 one is told GOAWAY by Shutdown,
// and its client connects again.
type starting struct {
	ln    net.Listener // the duplicate
	srv   *http.Server
	conns *drain.Conns
	errc  chan error    // Serve's result
	done  chan struct{} // closed once the server has stopped
	once  sync.Once
	log   *slog.Logger
}

// serveStarting starts answering on a duplicate of ln with msg; on a
// platform or listener that cannot be duplicated it serves nothing (the
// port stays silent until the server serves) and returns nil.
func serveStarting(ln net.Listener, tlsConf *tls.Config, msg string, log *slog.Logger) *starting {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	f, err := tl.File()
	if err != nil {
		log.Debug("no answer while starting: the listener cannot be duplicated", "err", err)
		return nil
	}
	dup, err := net.FileListener(f)
	_ = f.Close() // FileListener holds a duplicate of its own
	if err != nil {
		log.Debug("no answer while starting: the listener cannot be duplicated", "err", err)
		return nil
	}
	st := &starting{ln: dup, srv: newHTTPServer(startingHandler(msg), tlsConf, log), errc: make(chan error, 1),
		done: make(chan struct{}), log: log}
	st.conns = drain.Track(st.srv)
	go func() {
		if tlsConf != nil {
			st.errc <- st.srv.ServeTLS(plainHTTPListener{dup}, "", "")
			return
		}
		st.errc <- st.srv.Serve(dup)
	}()
	return st
}

// startingDrain bounds how long the starting server waits for its HTTP/1.1
// connections to close once it stops accepting (each closes after its one
// answer).
const startingDrain = 2 * time.Second

// end stops the starting server from accepting connections, and returns
// once it has; its open connections close in the background (wait waits
// for them). Only the first call does anything.
func (st *starting) end() {
	st.once.Do(func() {
		_ = st.ln.Close()
		if err := <-st.errc; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			st.log.Debug("the listener answering while starting failed", "err", err)
		}
		go func() {
			defer close(st.done)
			st.conns.AwaitClosed(startingDrain)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := st.srv.Shutdown(ctx); err != nil {
				_ = st.srv.Close()
			}
		}()
	})
}

// wait ends the starting server and waits until its connections have
// closed.
func (st *starting) wait() {
	st.end()
	<-st.done
}

// startingHandler answers every request with a Cosmos DB 503 whose
// message is msg.
func startingHandler(msg string) http.Handler {
	body, _ := json.Marshal(map[string]string{"code": "ServiceUnavailable", "message": msg})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		activity := r.Header.Get("x-ms-activity-id")
		if activity == "" {
			activity = newActivityID()
		}
		// Lower case, as the API sends Cosmos DB's headers.
		h["x-ms-activity-id"] = []string{activity}
		h["x-ms-request-charge"] = []string{"0"}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		if r.ProtoMajor == 1 {
			h["Connection"] = []string{"close"} // one answer per connection: nothing idle to close later
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(body)
	})
}

// newActivityID returns a random UUID (version 4), as the API's activity
// ids are.
func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

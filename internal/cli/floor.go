package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/server"
)

// floorCmd runs `partita floor`: the floor server (server.OpenFloor), a
// null Cosmos DB server on serve's listener, TLS and authentication that
// answers from memory. It takes serve's flags; those of the store, the
// engine and the extra listeners have no effect (--data holds only the
// generated certificate). It prints the same endpoint and connection-string
// lines as serve, which `partita bench --floor` reads.
func floorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, log, stop, code := startServing("partita floor", args, stdout, stderr)
	if code >= 0 {
		return code
	}
	defer stop()
	srv, err := server.OpenFloor(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "partita floor: %v\n", err)
		return 1
	}
	endpoint := srv.Endpoint()
	fmt.Fprintf(stdout, "Partita %s floor server (no storage; benchmarks only) is serving at %s\n", Version, endpoint)
	fmt.Fprintf(stdout, "Connection string: %s\n", connectionString(endpoint, cfg.Auth.Key))
	if err := srv.Run(ctx); err != nil {
		log.Error("floor server stopped", "err", err)
		return 1
	}
	return 0
}

// literalHostOnly refuses (403) requests whose Host is a name other than
// localhost: a web page the machine's browser opens can reach a loopback
// listener through DNS rebinding, but only under a name it controls, so a
// listener without authentication answers only requests addressed to it by
// IP address or as localhost (a security review: the profiles, and the
// command line with a --key, were readable so).
func literalHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if net.ParseIP(host) == nil && !strings.EqualFold(host, "localhost") {
			http.Error(w, "address this listener by IP address or as localhost", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// startPprof serves net/http/pprof on addr (nothing when addr is empty)
// until the returned stop is called. The listener is plain HTTP without
// authentication, for measuring on a trusted host.
func startPprof(addr string, stdout io.Writer, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: literalHostOnly(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // no write timeout: a profile takes its seconds
	fmt.Fprintf(stdout, "Go profiles (no authentication) at http://%s/debug/pprof/\n", ln.Addr())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener stopped", "err", err)
		}
	})
	return func() {
		_ = srv.Close()
		wg.Wait()
	}, nil
}

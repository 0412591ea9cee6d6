// Package server wires Partita's components from a config.Config and owns
// their lifecycle: it opens the store and engine, binds the listener (TLS
// with a generated self-signed certificate by default), serves the API, and
// on shutdown drains requests and closes the store.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/partitadb/partita/internal/api"
	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/metrics"
	"github.com/partitadb/partita/internal/store"
)

// Server is a running Partita node. Open binds it; Run serves until its
// context ends.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	st      *store.Store
	ln      net.Listener
	http    *http.Server
	certPEM []byte
	eng     *engine.Engine
}

// Open validates cfg, opens the store and engine and binds the listener.
// The caller must call Run (which closes everything) or Close.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	master, err := auth.DecodeKey(cfg.Auth.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	var readOnly []byte
	if cfg.Auth.ReadOnlyKey != "" {
		if readOnly, err = auth.DecodeKey(cfg.Auth.ReadOnlyKey); err != nil {
			return nil, fmt.Errorf("read-only key: %w", err)
		}
	}
	verifier, err := auth.NewVerifier(auth.Config{MasterKey: master, ReadOnlyKey: readOnly, MaxSkew: cfg.Auth.MaxClockSkew, AllowAAD: true})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log}
	var tlsConf *tls.Config
	if cfg.Server.TLS {
		cert, pem, err := loadOrCreateCert(cfg.Server, cfg.Store.Dir)
		if err != nil {
			return nil, err
		}
		s.certPEM = pem
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	}
	st, err := store.Open(store.Options{Dir: cfg.Store.Dir, Sync: cfg.Store.Durability == "sync", Logger: log, CacheBytes: int64(cfg.Store.CacheMB) << 20})
	if err != nil {
		return nil, err
	}
	s.st = st
	compat := cfg.API.EmulatorCompat
	eng, err := engine.New(ctx, st, engine.Config{GatewayQueryFull: cfg.Engine.GatewayQuery == "full", LenientIDs: compat, RateLimit: cfg.RateLimited(),
		LogicalPartitionMaxBytes: cfg.Engine.LogicalPartitionMaxBytes, PartitionMaxBytes: cfg.Engine.PartitionMaxBytes,
		PartitionMaxRU: cfg.Engine.PartitionMaxRU, AdaptiveCapacity: cfg.Engine.AdaptiveCapacity, LoadSplits: cfg.Engine.LoadSplits,
		BurstCapacity: cfg.Engine.BurstCapacity}, time.Now, log)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	s.eng = eng
	consistency := cfg.API.Consistency
	if compat && consistency == "Session" {
		consistency = "Strong" // the emulator the SDK suites run against is started with /consistency=Strong
	}
	handler := api.New(api.Config{
		AdvertiseEndpoint: cfg.API.AdvertiseEndpoint, Consistency: consistency,
		EmulatorIDQuirks: compat, TLS: cfg.Server.TLS,
	}, eng, verifier, time.Now, log)
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
	}
	s.ln = ln
	// /metrics is for Prometheus scrapers, which cannot sign Cosmos DB
	// requests: it is served without authentication and shows no key values.
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.NewHandler(eng))
	mux.Handle("/", handler)
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		TLSConfig:         tlsConf,
	}
	return s, nil
}

// Addr is the bound listen address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Endpoint is the URL clients connect to.
func (s *Server) Endpoint() string {
	scheme := "http"
	if s.cfg.Server.TLS {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/", scheme, s.ln.Addr())
}

// CertPEM is the server's TLS certificate in PEM form (nil without TLS), for
// clients that want to trust it rather than skip verification.
func (s *Server) CertPEM() []byte { return s.certPEM }

// Run serves until ctx is done, then shuts down gracefully (bounded by
// Server.ShutdownTimeout) and closes the store. It returns nil on a clean
// shutdown.
func (s *Server) Run(ctx context.Context) error {
	bg, stopBG := context.WithCancel(ctx)
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		s.eng.Run(bg) // splits
	}()
	errc := make(chan error, 1) // one send: Serve's result
	go func() {
		if s.http.TLSConfig != nil {
			errc <- s.http.ServeTLS(s.ln, "", "") // certificates come from TLSConfig; enables HTTP/2
			return
		}
		errc <- s.http.Serve(s.ln)
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Server.ShutdownTimeout)
		serveErr = s.http.Shutdown(sctx)
		cancel()
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) && serveErr == nil {
			serveErr = err
		}
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	stopBG()
	<-bgDone // before the store closes under it
	return errors.Join(serveErr, s.st.Close())
}

// Close releases a server that was opened but never run.
func (s *Server) Close() error {
	return errors.Join(s.ln.Close(), s.st.Close())
}

// Package cli implements the partita command: its subcommands (serve,
// check, advise, load, bench, floor, cluster, health, version), flags, and
// PARTITA_* environment variables. It is the only reader of flags and the
// environment, and the only place that picks log handlers.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/server"
	"github.com/partitadb/partita/internal/store"
)

// Version is the release version, set at link time
// (-ldflags "-X github.com/partitadb/partita/internal/cli.Version=v0.1.0").
var Version = "dev"

const usage = `partita — a Cosmos DB-compatible partitioned document database

Usage:
  partita serve [flags]    run the server (partita serve -h for flags)
  partita check --data DIR check a stopped server's data directory for inconsistencies (exit 1 if any)
  partita advise [flags]   recommend a partition key from a sample of items (and a workload)
  partita load [flags]     write bench's preload records straight into a stopped server's data directory (benchmarks)
  partita bench [flags]    generate load against a Cosmos DB endpoint and report throughput, RU/s, 429s, latency
                           (--floor: against partita serve and the floor server in one run, as ratios)
  partita floor [flags]    run the floor server: a null Cosmos DB server on serve's stack, with no storage (benchmarks only)
  partita cluster status   print each node's view of its cluster: members, each partition's leader and progress
  partita health [--url U] exit 0 if a server answers 200 (the container image's health check)
  partita version          print the version

Every flag can also be set as an environment variable: --log-level is PARTITA_LOG_LEVEL.
`

// Main runs the partita command with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "check":
		return checkCmd(ctx, args[1:], stdout, stderr)
	case "load":
		return loadCmd(ctx, args[1:], stdout, stderr)
	case "advise":
		return adviseCmd(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "floor":
		return floorCmd(ctx, args[1:], stdout, stderr)
	case "cluster":
		return clusterCmd(ctx, args[1:], stdout, stderr)
	case "health":
		return healthCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		v := Version
		if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		fmt.Fprintf(stdout, "partita %s\n", v)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "partita: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// serveFlags binds the serve flags to cfg.
func serveFlags(fs *flag.FlagSet, cfg *config.Config) {
	fs.StringVar(&cfg.Server.Addr, "addr", cfg.Server.Addr, "listen address")
	fs.StringVar(&cfg.Server.ComputeGatewayAddr, "compute-gateway-addr", cfg.Server.ComputeGatewayAddr, "second listen address that addresses every resource id exactly, like the emulator's compute gateway (:8903); default none")
	fs.StringVar(&cfg.Server.MetricsAddr, "metrics-addr", cfg.Server.MetricsAddr, "plain-HTTP listen address serving only GET /metrics for Prometheus, without authentication (bind it to loopback or a private network); default none")
	fs.StringVar(&cfg.Store.Dir, "data", cfg.Store.Dir, "data directory")
	fs.StringVar(&cfg.Cluster.Addr, "cluster-addr", cfg.Cluster.Addr, "this node's cluster address (host:port; port+1 is also used) for Raft and forwarded requests over mutual TLS; with --join and --cluster-secret, the node is a member of a cluster (default: a single node)")
	fs.Var((*listFlag)(&cfg.Cluster.Join), "join", "every member's cluster address, comma-separated, this node's among them: the same list on every member")
	fs.IntVar(&cfg.Cluster.Replicas, "replicas", cfg.Cluster.Replicas, "replicas of each physical partition in a cluster: each partition's Raft group has this many of the members (all of them, in a cluster of fewer)")
	fs.IntVar(&cfg.Cluster.SnapshotRateMB, "raft-snapshot-rate", cfg.Cluster.SnapshotRateMB, "MiB per second of the snapshots a node sends to replicas catching up, all together (0: unbound)")
	fs.IntVar(&cfg.Cluster.RaftLogKeep, "raft-log-keep", cfg.Cluster.RaftLogKeep, "applied entries each partition's Raft log keeps before truncating it; a replica further behind (down longer) catches up from a snapshot, streamed")
	fs.DurationVar(&cfg.Cluster.StartTimeout, "cluster-start-timeout", cfg.Cluster.StartTimeout, "how long a member waits at start for the members it needs (a majority; every member for a new cluster) before it exits; its API answers 503 meanwhile (0: until stopped)")
	fs.StringVar(&cfg.Cluster.Secret, "cluster-secret", cfg.Cluster.Secret, "the secret every member shares, at least 16 bytes (prefer PARTITA_CLUSTER_SECRET: a flag shows in the process list)")
	fs.StringVar(&cfg.Auth.Key, "key", cfg.Auth.Key, "master key, base64 (default: the Cosmos DB emulator's well-known key)")
	fs.StringVar(&cfg.Auth.ReadOnlyKey, "read-only-key", cfg.Auth.ReadOnlyKey, "read-only key, base64 (default: none)")
	fs.DurationVar(&cfg.Auth.MaxClockSkew, "max-clock-skew", cfg.Auth.MaxClockSkew, "accepted difference between a request's x-ms-date and the server clock")
	fs.StringVar(&cfg.Auth.AADJWKS, "aad-jwks", cfg.Auth.AADJWKS, "JSON Web Key Set file: verify type=aad (Entra ID) tokens against its keys (default: AAD tokens refused, or accepted unsigned with --emulator-compat)")
	fs.Var((*listFlag)(&cfg.Auth.AADIssuers), "aad-issuer", "accepted iss of AAD tokens, comma-separated, exact (required with --aad-jwks)")
	fs.Var((*listFlag)(&cfg.Auth.AADAudiences), "aad-audience", "accepted aud of AAD tokens, comma-separated, exact, e.g. https://myaccount.documents.azure.com (required with --aad-jwks)")
	fs.Var((*listFlag)(&cfg.Auth.AADReadWriteRoles), "aad-read-write-roles", "AAD token roles or scp scopes that give read-write access, comma-separated")
	fs.Var((*listFlag)(&cfg.Auth.AADReadOnlyRoles), "aad-read-only-roles", "AAD token roles or scp scopes that give read-only access, comma-separated")
	fs.BoolVar(&cfg.Server.TLS, "tls", cfg.Server.TLS, "serve HTTPS (a self-signed certificate is generated in the data directory unless --tls-cert/--tls-key are given)")
	fs.StringVar(&cfg.Server.TLSCert, "tls-cert", cfg.Server.TLSCert, "TLS certificate PEM file")
	fs.StringVar(&cfg.Server.TLSKey, "tls-key", cfg.Server.TLSKey, "TLS private key PEM file")
	fs.StringVar(&cfg.Store.Durability, "durability", cfg.Store.Durability, "sync: acknowledged writes are in the synced WAL; relaxed: WAL synced in the background every 100 ms (a crash may lose the last 100 ms of writes)")
	fs.IntVar(&cfg.Store.CacheMB, "cache-mb", cfg.Store.CacheMB, "storage block cache size in MiB (documents and index blocks kept in memory)")
	fs.Int64Var(&cfg.Store.MinFreeBytes, "min-free-bytes", cfg.Store.MinFreeBytes, "writes get 507 while the data directory's disk has fewer free bytes (reads go on; writes resume when space returns); 0: no floor")
	fs.Int64Var(&cfg.Store.BallastBytes, "ballast-bytes", cfg.Store.BallastBytes, "size of the ballast file kept in the data directory and released when the disk fills up anyway, so that the store can still flush and open; 0: none")
	fs.StringVar(&cfg.API.AdvertiseEndpoint, "advertise-endpoint", cfg.API.AdvertiseEndpoint, "endpoint URL the account advertises to SDKs (default: the address each client used)")
	fs.StringVar(&cfg.API.Consistency, "consistency", cfg.API.Consistency, "account default consistency level")
	fs.BoolVar(&cfg.API.EmulatorCompat, "emulator-compat", cfg.API.EmulatorCompat, "reproduce Cosmos DB emulator quirks some SDK test suites expect (see README)")
	fs.IntVar(&cfg.Engine.QueryMemoMB, "query-memo-mb", cfg.Engine.QueryMemoMB, "MiB of query results kept for the next pages of queries evaluated whole (DISTINCT, GROUP BY, aggregates), of sorted queries read ahead and of index entries gathered; 0: none")
	fs.StringVar(&cfg.Engine.GatewayQuery, "gateway-query", cfg.Engine.GatewayQuery, "gateway: refuse cross-partition queries that need merging, like Cosmos DB; full: run every query server-side")
	fs.StringVar(&cfg.Engine.RateLimit, "rate-limit", cfg.Engine.RateLimit, "on: requests past a physical partition's share of the provisioned RU/s get 429; off: unthrottled; auto: on unless --emulator-compat")
	fs.IntVar(&cfg.Engine.PartitionMaxRU, "partition-max-ru", cfg.Engine.PartitionMaxRU, "most RU/s one physical partition serves; raising throughput past partitions x this splits partitions")
	fs.Int64Var(&cfg.Engine.PartitionMaxBytes, "partition-max-bytes", cfg.Engine.PartitionMaxBytes, "item bytes past which a physical partition splits (on a boundary between logical partitions)")
	fs.BoolVar(&cfg.Engine.BurstCapacity, "burst-capacity", cfg.Engine.BurstCapacity, "Cosmos DB burst capacity: a partition banks up to 5 minutes of unused RU/s and spends it at up to 3,000 RU/s")
	fs.BoolVar(&cfg.Engine.LoadSplits, "load-splits", cfg.Engine.LoadSplits, "split a partition that stays throttled: where its load halves, or around a hot logical partition to isolate it (beyond Cosmos DB)")
	fs.BoolVar(&cfg.Engine.AdaptiveCapacity, "adaptive-capacity", cfg.Engine.AdaptiveCapacity, "let a partition out of budget borrow its container's idle partitions' budget, up to --partition-max-ru (beyond Cosmos DB)")
	fs.Int64Var(&cfg.Engine.LogicalPartitionMaxBytes, "logical-partition-max-bytes", cfg.Engine.LogicalPartitionMaxBytes, "most item bytes one logical partition may hold; writes past it get 403/1014")
	fs.StringVar(&cfg.Logging.Level, "log-level", cfg.Logging.Level, "debug, info, warn or error")
	fs.StringVar(&cfg.Logging.Format, "log-format", cfg.Logging.Format, "text or json")
	fs.DurationVar(&cfg.Server.ShutdownTimeout, "shutdown-timeout", cfg.Server.ShutdownTimeout, "how long a graceful shutdown may take")
	fs.IntVar(&cfg.Server.MaxConnections, "max-connections", cfg.Server.MaxConnections, "most connections each listener holds open at once; past it new ones wait until one closes")
}

// listFlag is a comma-separated list flag: each Set replaces the list (so a
// flag overrides both the default and the environment), blanks around items
// are trimmed and empty items dropped, and "" sets an empty list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = nil
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}

// parseFlags sets fs's flags from PARTITA_* variables (--log-level is
// PARTITA_LOG_LEVEL), then from args: flags win over the environment.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var envErrs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := "PARTITA_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	if err := errors.Join(envErrs...); err != nil {
		return err
	}
	return fs.Parse(args)
}

// parseServe parses args over defaults and PARTITA_* variables (flags win).
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (config.Config, error) {
	cfg, _, err := parseServeAs("partita serve", args, getenv, stderr)
	return cfg, err
}

// parseServeAs is parseServe for the command name, with the flags that are
// not the config's.
func parseServeAs(name string, args []string, getenv func(string) string, stderr io.Writer) (config.Config, serveOptions, error) {
	cfg := config.Default()
	var o serveOptions
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	serveFlags(fs, &cfg)
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "plain-HTTP listen address serving Go's net/http/pprof profiles (/debug/pprof/), without authentication, for measuring; default none")
	o.gcHeadroomMB = defaultGCHeadroomMB
	fs.IntVar(&o.gcHeadroomMB, "gc-headroom-mb", o.gcHeadroomMB, "MiB of Go heap set aside, never touched, to pace the garbage collector: a collection waits for about this much more allocation (the live heap is a few MiB: the data is in Pebble, off the Go heap); 0: none")
	if err := parseFlags(fs, args, getenv); err != nil {
		return cfg, o, err
	}
	if fs.NArg() > 0 {
		return cfg, o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.gcHeadroomMB < 0 || o.gcHeadroomMB > maxGCHeadroomMB {
		return cfg, o, fmt.Errorf("--gc-headroom-mb %d: want 0 to %d", o.gcHeadroomMB, maxGCHeadroomMB)
	}
	return cfg, o, cfg.Validate()
}

// serveOptions are the flags of serve (and floor) that are not the
// config's: they concern the process, not a component.
type serveOptions struct {
	pprofAddr    string // net/http/pprof listener; "" for none
	gcHeadroomMB int    // gcHeadroom's size in MiB; 0 for none
}

func newLogger(c config.Logging, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// startServing does what serve and floor do first: parse the flags of
// command name, make the logger and start the pprof listener. When it
// returns a non-negative code, the command exits with it; otherwise the
// caller must call stop when it is done.
func startServing(name string, args []string, stdout, stderr io.Writer) (cfg config.Config, log *slog.Logger, stop func(), code int) {
	cfg, o, err := parseServeAs(name, args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, nil, nil, 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return cfg, nil, nil, 2
	}
	log = newLogger(cfg.Logging, stderr)
	stopPprof, err := startPprof(o.pprofAddr, stdout, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return cfg, nil, nil, 1
	}
	headroom := gcHeadroom(o.gcHeadroomMB << 20)
	return cfg, log, func() {
		stopPprof()
		runtime.KeepAlive(headroom)
	}, -1
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, log, stop, code := startServing("partita serve", args, stdout, stderr)
	if code >= 0 {
		return code
	}
	defer stop()
	start := time.Now()
	srv, err := server.Open(ctx, cfg, log)
	if errors.Is(err, store.ErrInUse) {
		fmt.Fprintf(stderr, "partita serve: the data directory %s is already in use by another process (another partita serve?): stop it, or pass another --data\n", cfg.Store.Dir)
		return 1
	}
	if err != nil && ctx.Err() != nil {
		// Asked to stop while it started (a cluster member waiting for its
		// peers, say): a stop as asked, not a failure.
		log.Info("stopped before it was ready", "err", err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "partita serve: %v\n", err)
		return 1
	}
	endpoint := srv.Endpoint()
	fmt.Fprintf(stdout, "Partita %s is serving the Cosmos DB API at %s (data in %s, ready in %s)\n",
		Version, endpoint, cfg.Store.Dir, time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "Connection string: %s\n", connectionString(endpoint, cfg.Auth.Key))
	if a := srv.ComputeGatewayAddr(); a != nil {
		fmt.Fprintf(stdout, "Compute-gateway listener (ids addressed exactly) at %s\n", a)
	}
	if a := srv.MetricsAddr(); a != nil {
		fmt.Fprintf(stdout, "Prometheus metrics (no authentication) at http://%s/metrics\n", a)
	}
	if cfg.Server.TLS {
		fmt.Fprintf(stdout, "TLS certificate is self-signed unless given: trust it with SSL_CERT_FILE / NODE_EXTRA_CA_CERTS=%s, or skip verification as for the emulator.\n",
			shellQuote(certPath(cfg)))
	}
	if err := srv.Run(ctx); err != nil {
		log.Error("server stopped", "err", err)
		return 1
	}
	log.Info("server stopped")
	return 0
}

func certPath(cfg config.Config) string {
	if cfg.Server.TLSCert != "" {
		return cfg.Server.TLSCert
	}
	return cfg.Store.Dir + "/tls/cert.pem"
}

// newFlagSet returns the flag set of a command that prints usage, then the
// flags' defaults, for -h and on errors (to stderr).
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// connectionString is the connection string serve and floor print: with
// the key itself only when it is the emulator's well-known one. A key of
// one's own stays out of the output, which logs keep (a security review:
// a key passed through PARTITA_KEY, to keep it out of the process list,
// was printed whole).
func connectionString(endpoint, key string) string {
	if key != config.EmulatorKey {
		key = "<the master key you gave: --key or PARTITA_KEY>"
	}
	return fmt.Sprintf("AccountEndpoint=%s;AccountKey=%s;", endpoint, key)
}

// shellQuote returns s as a shell word: as it is when it has only characters
// no shell treats specially, else in single quotes (a path with spaces
// broke the start-up hint's copy and paste: an operator hunt).
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,=@%", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

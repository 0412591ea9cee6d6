// Package config owns Partita's configuration: one Config made of
// per-component sub-configs, with Default and Validate. Only package cli
// fills it from flags and PARTITA_* variables; each component receives its
// own sub-config.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// EmulatorKey is the Cosmos DB emulator's published, well-known master key:
// the default, so the SDKs' emulator samples run unchanged.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// Config is the whole server configuration.
type Config struct {
	Server  Server
	Store   Store
	Auth    Auth
	API     API
	Engine  Engine
	Logging Logging
	Cluster Cluster
}

// Cluster configures a node of a cluster (docs/cluster.md). The zero value
// is a single node.
type Cluster struct {
	// Addr is this node's cluster address (host:port): its mutual-TLS
	// listener for Raft and forwarded requests; port+1 is its etcd peer
	// port. Empty: a single node.
	Addr string
	// Join lists every member's cluster address, this node's among them:
	// the same list on every node.
	Join []string
	// Secret is the secret every member shares, at least 16 bytes: the
	// cluster's certificate authority derives from it.
	Secret string
	// Replicas is how many replicas each physical partition has (default
	// 3): each partition's group has this many of the members as voters
	// (docs/cluster.md, "Placement on a subset"); a cluster of fewer
	// members has a replica on each.
	Replicas int
	// RaftLogKeep is how many applied entries a partition's Raft log keeps
	// before it is truncated: a replica further behind catches up from a
	// snapshot, streamed (docs/cluster.md). Default 4096.
	RaftLogKeep int
	// SnapshotRateMB bounds, in MiB per second, the snapshots a node sends
	// to replicas catching up, all together; 0 leaves them unbound.
	// Default 32 (CockroachDB's default for its snapshots).
	SnapshotRateMB int
	// StartTimeout bounds how long a member waits at start for the others
	// it needs (a majority; all of them for a new cluster) before it gives
	// up and exits; 0, the default, waits until it is stopped. Its API
	// listener answers 503 meanwhile.
	StartTimeout time.Duration
}

// Server configures the listener.
type Server struct {
	// Addr is the listen address. Default "127.0.0.1:8081".
	Addr string
	// ComputeGatewayAddr, if set, is a second listen address serving the
	// same account the way the Cosmos DB emulator's compute gateway does
	// (its port 8903): every resource id is addressed exactly, without the
	// routing gateway's id quirks that API.EmulatorCompat reproduces on
	// Addr, and the account advertises the address the client used.
	// Default "" (none).
	ComputeGatewayAddr string
	// MetricsAddr, if set, is a plain-HTTP listen address serving only
	// GET /metrics (Prometheus). It has no authentication: the metrics name
	// databases and containers and their sizes, so bind it to loopback or a
	// private network. The API listeners do not serve /metrics. Default ""
	// (none).
	MetricsAddr string
	// TLS serves HTTPS. Default true.
	TLS bool
	// TLSCert and TLSKey are PEM files; empty: a self-signed certificate is
	// generated on first start and kept in the data directory.
	TLSCert, TLSKey string
	// ShutdownTimeout bounds a graceful shutdown. Default 10s.
	ShutdownTimeout time.Duration
	// MaxConnections bounds the connections each listener (API, compute
	// gateway, metrics) holds open at once: past it, new ones wait in the
	// kernel's queue until one closes. With MaxHeaderBytes it bounds what
	// clients that never authenticate can make the server hold. Default
	// 4096.
	MaxConnections int
}

// Store configures storage.
type Store struct {
	// Dir is the data directory. Default "./partita-data".
	Dir string
	// Durability is "sync" (acknowledged writes are in the synced WAL,
	// default) or "relaxed" (the WAL is synced in the background: a crash
	// may lose the last moments of acknowledged writes).
	Durability string
	// CacheMB is the storage block cache, in MiB. Default 256.
	CacheMB int
	// MinFreeBytes is the free space of the data directory's filesystem,
	// in bytes, below which writes are refused with 507 (reads go on),
	// leaving room for the store to flush its two 32 MiB memtables,
	// rewrite its manifest and compact. Writes resume on their own when
	// space returns. Default 128 MiB; 0 disables the floor.
	MinFreeBytes int64
	// BallastBytes is the size of the ballast file kept in the data
	// directory: space released when the disk fills up anyway (another
	// process filled it), so that the store can still flush, compact and
	// open, and made again once there is room. Default 128 MiB (enough to
	// open after a full-disk stop: replaying the write-ahead logs flushes
	// them); 0: no ballast.
	BallastBytes int64
}

// Auth configures authentication.
type Auth struct {
	// Key is the base64 master key. Default EmulatorKey.
	Key string
	// ReadOnlyKey is the base64 read-only key: it may read and query but not
	// write. Default empty: no read-only key.
	ReadOnlyKey string
	// MaxClockSkew is the accepted distance between x-ms-date and the
	// server's clock. Default 15m.
	MaxClockSkew time.Duration
	// AADJWKS is a JSON Web Key Set file (e.g. a saved copy of
	// https://login.microsoftonline.com/{tenant}/discovery/v2.0/keys): when
	// set, type=aad tokens are verified against its keys, AADIssuers,
	// AADAudiences and the role lists, even with API.EmulatorCompat. Read
	// once at startup. Default empty: AAD tokens are refused, except that
	// API.EmulatorCompat accepts them unsigned, as the emulator does.
	AADJWKS string
	// AADIssuers are the accepted iss values of AAD tokens, compared exactly
	// (e.g. https://login.microsoftonline.com/{tenant}/v2.0 or
	// https://sts.windows.net/{tenant}/). Required with AADJWKS.
	AADIssuers []string
	// AADAudiences are the accepted aud values of AAD tokens, compared
	// exactly (e.g. https://myaccount.documents.azure.com, the scope the Go
	// SDK asks for without /.default). Required with AADJWKS.
	AADAudiences []string
	// AADReadWriteRoles are the values of a token's roles claim (app roles)
	// or scp claim (delegated scopes) that give read-write access. Default
	// ["Partita.ReadWrite"].
	AADReadWriteRoles []string
	// AADReadOnlyRoles are the roles or scopes that give read-only access.
	// Default ["Partita.ReadOnly"].
	AADReadOnlyRoles []string
}

// API configures the REST front end.
type API struct {
	// AdvertiseEndpoint is the endpoint the account document advertises;
	// empty: the scheme and host the client used.
	AdvertiseEndpoint string
	// Consistency is the account's default consistency level. Default "Session".
	Consistency string
	// EmulatorCompat reproduces Cosmos DB emulator behaviours that production
	// Cosmos DB does not have and some SDK test suites expect: Strong
	// default consistency, ids with '/', '\\', '?', '#' accepted on create,
	// the emulator gateway's 401/400 answers for ids it cannot address, and
	// type=aad tokens accepted unsigned (any well-formed, unexpired JWT gets
	// read-write access) unless Auth.AADJWKS is set. Default false.
	EmulatorCompat bool
}

// Engine configures the engine.
type Engine struct {
	// GatewayQuery is "gateway" (refuse cross-partition queries that need
	// merging, as Cosmos DB's gateway does; default) or "full" (execute
	// every query server-side).
	GatewayQuery string
	// RateLimit is "on" (provisioned throughput enforced per physical
	// partition: requests past a partition's budget get 429), "off", or
	// "auto" (default): on, except with API.EmulatorCompat, as the Cosmos DB
	// emulator does not rate-limit unless asked.
	RateLimit string
	// AdaptiveCapacity lends idle partitions' budget to a hot one (beyond
	// Cosmos DB). Default false.
	AdaptiveCapacity bool
	// BurstCapacity enables Cosmos DB's burst capacity. Default false.
	BurstCapacity bool
	// LoadSplits splits partitions that stay throttled (beyond Cosmos DB).
	// Default false.
	LoadSplits bool
	// LogicalPartitionMaxBytes caps one logical partition's item bytes
	// (403/1014 past it). Default 20 GiB.
	LogicalPartitionMaxBytes int64
	// PartitionMaxBytes is the item bytes past which a physical partition
	// splits. Default 50 GiB.
	PartitionMaxBytes int64
	// PartitionMaxRU is the most RU/s one physical partition serves;
	// raising throughput past partitions × this splits. Default 10,000.
	PartitionMaxRU int
	// QueryMemoMB bounds, in MiB, the rows of queries evaluated whole
	// (DISTINCT, GROUP BY, aggregates) and of sorted pages read ahead
	// that the engine keeps for their next pages. Default 64; 0 keeps
	// none.
	QueryMemoMB int
}

// Logging configures logs.
type Logging struct {
	// Level is debug, info (default), warn or error.
	Level string
	// Format is "text" (default) or "json".
	Format string
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Server:  Server{Addr: "127.0.0.1:8081", TLS: true, ShutdownTimeout: 10 * time.Second, MaxConnections: 4096},
		Store:   Store{Dir: "./partita-data", Durability: "sync", CacheMB: 256, MinFreeBytes: 128 << 20, BallastBytes: 128 << 20},
		Auth:    Auth{Key: EmulatorKey, MaxClockSkew: 15 * time.Minute, AADReadWriteRoles: []string{"Partita.ReadWrite"}, AADReadOnlyRoles: []string{"Partita.ReadOnly"}},
		API:     API{Consistency: "Session"},
		Engine:  Engine{GatewayQuery: "gateway", RateLimit: "auto", LogicalPartitionMaxBytes: 20 << 30, PartitionMaxBytes: 50 << 30, PartitionMaxRU: 10000, QueryMemoMB: 64},
		Logging: Logging{Level: "info", Format: "text"},
		Cluster: Cluster{Replicas: 3, RaftLogKeep: 4096, SnapshotRateMB: 32},
	}
}

// Validate reports every problem in c, joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, _, err := net.SplitHostPort(c.Server.Addr); err != nil {
		bad("addr %q: %v", c.Server.Addr, err)
	}
	if c.Server.ComputeGatewayAddr != "" {
		if _, _, err := net.SplitHostPort(c.Server.ComputeGatewayAddr); err != nil {
			bad("compute-gateway-addr %q: %v", c.Server.ComputeGatewayAddr, err)
		}
	}
	if c.Server.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.Server.MetricsAddr); err != nil {
			bad("metrics-addr %q: %v", c.Server.MetricsAddr, err)
		}
	}
	if c.Server.MaxConnections < 16 {
		bad("max-connections %d: at least 16", c.Server.MaxConnections)
	}
	if (c.Server.TLSCert == "") != (c.Server.TLSKey == "") {
		bad("tls-cert and tls-key must be given together")
	}
	if !c.Server.TLS && c.Server.TLSCert != "" {
		bad("tls-cert and tls-key are given but tls is off: drop them, or --tls") // they were ignored
	}
	if c.Store.Dir == "" {
		bad("data directory must not be empty")
	}
	// A secret alone (PARTITA_CLUSTER_SECRET set for every process on a
	// machine) does not make a node a member.
	if cl := c.Cluster; cl.Addr != "" || len(cl.Join) > 0 {
		if host, port, err := net.SplitHostPort(cl.Addr); err != nil {
			bad("cluster-addr %q: %v", cl.Addr, err)
		} else if p, err := strconv.Atoi(port); err == nil && p < 65535 {
			// The etcd member listens on the next port: refused later
			// with etcd's "address already in use", naming no clash.
			etcd := net.JoinHostPort(host, strconv.Itoa(p+1))
			for name, addr := range map[string]string{"addr": c.Server.Addr, "metrics-addr": c.Server.MetricsAddr, "compute-gateway-addr": c.Server.ComputeGatewayAddr} {
				if addr == etcd {
					bad("cluster-addr %s uses port %d for its etcd member, which is --%s's", cl.Addr, p+1, name)
				}
			}
		}
		if len(cl.Join) == 0 {
			bad("join is required with cluster-addr: every member's cluster address, this node's among them")
		}
		if len(cl.Secret) < 16 {
			bad("cluster-secret is required with cluster-addr, at least 16 bytes, the same on every member")
		}
		switch {
		case cl.Replicas < 1:
			bad("replicas %d: want 1 or more", cl.Replicas)
		case cl.RaftLogKeep < 1:
			bad("raft-log-keep %d: want 1 or more", cl.RaftLogKeep)
		case cl.SnapshotRateMB < 0:
			bad("raft-snapshot-rate %d: want 0 (unbound) or more MiB/s", cl.SnapshotRateMB)
		}
	}
	if c.Cluster.StartTimeout < 0 {
		bad("cluster-start-timeout %v: want 0 (wait until stopped) or more", c.Cluster.StartTimeout)
	}
	if c.Store.CacheMB < 8 {
		bad("cache-mb %d: want at least 8", c.Store.CacheMB)
	}
	if c.Store.MinFreeBytes < 0 {
		bad("min-free-bytes %d: want 0 (no floor) or more", c.Store.MinFreeBytes)
	}
	if c.Store.BallastBytes < 0 {
		bad("ballast-bytes %d: want 0 (no ballast) or more", c.Store.BallastBytes)
	}
	if c.Store.Durability != "sync" && c.Store.Durability != "relaxed" {
		bad("durability %q: want sync or relaxed", c.Store.Durability)
	}
	for name, k := range map[string]string{"key": c.Auth.Key, "read-only-key": c.Auth.ReadOnlyKey} {
		if k == "" && name == "read-only-key" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) == 0 {
			bad("%s is not a base64 key", name)
		}
	}
	if c.Auth.MaxClockSkew <= 0 {
		bad("max-clock-skew must be positive")
	}
	if c.Server.ShutdownTimeout <= 0 {
		// 0 or less cut every request off at the first signal and failed the
		// stop (an operator hunt).
		bad("shutdown-timeout must be positive")
	}
	if c.Auth.ReadOnlyKey != "" && c.Auth.ReadOnlyKey == c.Auth.Key {
		bad("read-only-key is the same as key: a client holding it could write")
	}
	if c.Auth.AADJWKS != "" {
		if len(c.Auth.AADIssuers) == 0 {
			bad("aad-issuer is required with aad-jwks: a public key set such as Entra ID's signs every tenant's tokens")
		}
		if len(c.Auth.AADAudiences) == 0 {
			bad("aad-audience is required with aad-jwks")
		}
	} else if len(c.Auth.AADIssuers) > 0 || len(c.Auth.AADAudiences) > 0 {
		bad("aad-issuer and aad-audience need aad-jwks (the keys AAD tokens are verified with)")
	}
	for _, r := range c.Auth.AADReadWriteRoles {
		if slices.Contains(c.Auth.AADReadOnlyRoles, r) {
			bad("role %q is both in aad-read-write-roles and aad-read-only-roles", r)
		}
	}
	switch c.API.Consistency {
	case "Strong", "BoundedStaleness", "Session", "ConsistentPrefix", "Eventual":
	default:
		bad("consistency %q: want Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual", c.API.Consistency)
	}
	if e := c.API.AdvertiseEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("advertise-endpoint %q is not an http(s) URL", e)
		}
	}
	if c.Engine.QueryMemoMB < 0 {
		bad("query-memo-mb %d: want 0 (keep none) or more", c.Engine.QueryMemoMB)
	}
	if c.Engine.PartitionMaxRU < 400 {
		bad("partition-max-ru %d: want at least 400", c.Engine.PartitionMaxRU)
	}
	if c.Engine.PartitionMaxBytes < 1024 {
		bad("partition-max-bytes %d: want at least 1024", c.Engine.PartitionMaxBytes)
	}
	if c.Engine.LogicalPartitionMaxBytes < 1024 {
		bad("logical-partition-max-bytes %d: want at least 1024", c.Engine.LogicalPartitionMaxBytes)
	}
	if c.Engine.RateLimit != "auto" && c.Engine.RateLimit != "on" && c.Engine.RateLimit != "off" {
		bad("rate-limit %q: want on, off or auto", c.Engine.RateLimit)
	}
	if c.Engine.GatewayQuery != "gateway" && c.Engine.GatewayQuery != "full" {
		bad("gateway-query %q: want gateway or full", c.Engine.GatewayQuery)
	}
	switch c.Logging.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level %q: want debug, info, warn or error", c.Logging.Level)
	}
	if c.Logging.Format != "text" && c.Logging.Format != "json" {
		bad("log-format %q: want text or json", c.Logging.Format)
	}
	return errors.Join(errs...)
}

// RateLimited reports whether provisioned throughput is enforced.
func (c Config) RateLimited() bool {
	return c.Engine.RateLimit == "on" || (c.Engine.RateLimit == "auto" && !c.API.EmulatorCompat)
}

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/bench"
	"github.com/partitadb/partita/internal/config"
)

// benchOptions are the bench flags that are not bench.Config's.
type benchOptions struct {
	json       bool // print the result as JSON instead of a table
	noProgress bool

	// --floor: compare with the floor server; --compare-partitions: a
	// container of that many partitions with one of one (benchfloor.go).
	floor             bool
	comparePartitions int
	rounds            int
	durability        string // of the partita serve child
	serveData         string // its data directory; "" for a temporary one
	serveFlags        string // more flags for it, space-separated
	endpointSet       bool   // --endpoint given: measure it instead of a child
}

// benchFlags binds the bench flags to cfg and o.
func benchFlags(fs *flag.FlagSet, cfg *bench.Config, o *benchOptions, mix *string) {
	fs.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "account endpoint: partita serve, the Cosmos DB emulator or a Cosmos DB account")
	fs.StringVar(&cfg.Key, "key", cfg.Key, "account master key, base64 (default: the Cosmos DB emulator's well-known key)")
	fs.StringVar(&cfg.CACert, "ca-cert", cfg.CACert, "PEM file of a CA certificate to trust, e.g. partita-data/tls/cert.pem")
	fs.BoolVar(&cfg.Insecure, "insecure", cfg.Insecure, "skip TLS certificate verification (as for the emulator)")
	fs.StringVar(&cfg.Database, "database", cfg.Database, "database (default bench)")
	fs.StringVar(&cfg.Container, "container", cfg.Container, "container, partition key path /pk (default: ycsb for ycsb-* and query, else the workload's name)")
	fs.BoolVar(&cfg.Create, "create", cfg.Create, "create the database and container if missing")
	fs.BoolVar(&cfg.Reset, "reset", cfg.Reset, "delete and recreate the container first (implies --create)")
	fs.IntVar(&cfg.Throughput, "throughput", 24000, "manual RU/s of a created container (a new container gets ceil(RU/6000) partitions)")
	fs.StringVar(&cfg.IndexingPolicy, "indexing-policy", cfg.IndexingPolicy, `indexing policy (JSON) of a created container, e.g. '{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/data/?"}]}' (default: every path indexed)`)
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "create the container with at least this many partitions (at 6000 RU/s each), then set --throughput")
	fs.StringVar(&cfg.Workload, "workload", bench.VehiclesHash, "workload: "+strings.Join(bench.Workloads(), ", "))
	fs.StringVar(mix, "mix", "", "write,read,query percentages, e.g. 80,10,10 (default: the workload's)")
	fs.StringVar(&cfg.FanOut, "fan-out", bench.FanOutCross, "how vehicles-random reads a reading or a VIN without its key: cross (one cross-partition query) or keys (one request per suffix)")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to measure")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "run the load this long before measuring")
	fs.Int64Var(&cfg.Ops, "ops", cfg.Ops, "stop after this many operations (0: no limit)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "workers, each with one operation in flight")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "target operations per second over all workers (0: as fast as possible)")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "SDK retries of a throttled request (0: count every 429, and the worker waits its x-ms-retry-after-ms)")
	fs.IntVar(&cfg.Records, "records", cfg.Records, "records preloaded for ycsb-* and query (default 1000), query-pk and query-filter (default 20000)")
	fs.BoolVar(&cfg.NoPreload, "no-preload", cfg.NoPreload, "do not preload the records of ycsb-*, query, query-pk and query-filter (an earlier run did, with the same --records and --item-bytes)")
	fs.StringVar(&cfg.Keys, "keys", cfg.Keys, "how ycsb-* and query-pk pick records or keys: zipfian (default) or uniform")
	fs.IntVar(&cfg.PageSize, "page-size", cfg.PageSize, "x-ms-max-item-count of queries (0: the service's default, 100; -1: unbounded)")
	fs.BoolVar(&o.floor, "floor", o.floor, "compare with the floor server: start partita floor and (unless --endpoint is given: then add --create unless its container exists) partita serve as child processes, run --rounds interleaved rounds of --duration on each, and report medians, ratios and the servers' CPU per operation")
	fs.IntVar(&o.comparePartitions, "compare-partitions", 0, "compare the workload on a container of this many physical partitions with the same on a container of one, on one server: partita serve as a child process unless --endpoint is given (then run it with --rate-limit off), in --rounds interleaved rounds as --floor does; the containers are <container>-p<N> and <container>-p1, each created with N × 6000 RU/s")
	fs.IntVar(&o.rounds, "rounds", 5, "with --floor or --compare-partitions: rounds per side")
	fs.StringVar(&o.durability, "durability", "sync", "with --floor or --compare-partitions: the durability of the partita serve child (sync or relaxed)")
	fs.StringVar(&o.serveData, "serve-data", "", "with --floor or --compare-partitions: data directory of the partita serve child (default: a temporary directory, removed afterwards)")
	fs.StringVar(&o.serveFlags, "serve-flags", "", "with --floor or --compare-partitions: more flags for the partita serve child, space-separated, e.g. \"--pprof-addr 127.0.0.1:6060\"")
	fs.IntVar(&cfg.ItemBytes, "item-bytes", cfg.ItemBytes, "approximate item size (default 1000 for ycsb-* and query, 300 for vehicles)")
	fs.IntVar(&cfg.Buckets, "buckets", 400, "suffix buckets of vehicles-random and vehicles-hash")
	fs.IntVar(&cfg.Vehicles, "vehicles", 10000, "distinct VINs")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the operation mix and key choice")
	fs.BoolVar(&o.json, "json", o.json, "print the result as one JSON document instead of a table")
	fs.BoolVar(&o.noProgress, "no-progress", o.noProgress, "no progress line on stderr (it is shown only on a terminal)")
}

// parseBench parses args over defaults and PARTITA_* variables (flags win).
func parseBench(args []string, getenv func(string) string, stderr io.Writer) (bench.Config, benchOptions, error) {
	cfg := bench.Config{Endpoint: "https://127.0.0.1:8081/", Key: config.EmulatorKey}
	var o benchOptions
	var mix string
	fs := flag.NewFlagSet("partita bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchFlags(fs, &cfg, &o, &mix)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: partita bench [flags]\n\nGenerates load over the Cosmos DB protocol and reports throughput, RU/s, 429s and latency per operation.\nEvery flag can also be set as an environment variable: --key is PARTITA_KEY.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv); err != nil {
		return cfg, o, err
	}
	if fs.NArg() > 0 {
		return cfg, o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.endpointSet = o.endpointSet || f.Name == "endpoint" })
	o.endpointSet = o.endpointSet || getenv("PARTITA_ENDPOINT") != ""
	switch {
	case o.floor && o.comparePartitions != 0:
		return cfg, o, fmt.Errorf("%w: --floor and --compare-partitions: choose one comparison", bench.ErrInvalidConfig)
	case o.comparePartitions < 0 || o.comparePartitions == 1:
		return cfg, o, fmt.Errorf("%w: compare-partitions %d: want 2 or more (the other side has one)", bench.ErrInvalidConfig, o.comparePartitions)
	case (o.floor || o.comparePartitions > 0) && o.rounds < 1:
		return cfg, o, fmt.Errorf("%w: rounds %d: want at least 1", bench.ErrInvalidConfig, o.rounds)
	}
	if mix != "" {
		m, err := bench.ParseMix(mix)
		if err != nil {
			return cfg, o, err
		}
		cfg.Mix = &m
	}
	return cfg, o, nil
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// benchCmd runs `partita bench`: exit code 0 when the run completed (or
// was interrupted, after printing the summary so far), 1 when it could not
// run, 2 for bad flags.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, o, err := parseBench(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "partita bench: %v\n", err)
		return 2
	}
	var progress io.Writer
	if !o.noProgress && isTerminal(stderr) {
		progress = stderr
	}
	if o.floor || o.comparePartitions > 0 {
		return benchCompare(ctx, cfg, o, stdout, stderr)
	}
	res, err := bench.Run(ctx, cfg, progress)
	if err != nil {
		fmt.Fprintf(stderr, "partita bench: %v\n", err)
		if errors.Is(err, bench.ErrInvalidConfig) {
			return 2
		}
		return 1
	}
	if o.json {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "partita bench: %v\n", err)
		return 1
	}
	return 0
}

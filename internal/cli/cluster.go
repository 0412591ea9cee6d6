package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/cluster"
	"github.com/partitadb/partita/internal/config"
)

const clusterUsage = `Usage:
  partita cluster status --endpoint URL[,URL...] [--key KEY] [--ca-cert FILE | --insecure] [--json] [--digest]

Prints each node's view of its cluster (GET /_partita/cluster): its members
and, for every keyspace (a physical partition's replicas, one Raft group)
it holds a replica of, the members holding its replicas (--replicas of
them), the leader it knows, whether it leads, the term and how far it has
applied. Give every member's endpoint to compare their views.

With --digest, each node also hashes its replica of every keyspace (a scan
of all its data), and the replicas that have applied the same log index are
compared: the command exits 1 if any differ. Replicas at different indexes
are not compared; run it again once writes have stopped.
`

// clusterCmd runs `partita cluster`.
func clusterCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	fs := flag.NewFlagSet("partita cluster status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		endpoints []string
		c         adviseConfig // the endpoint, key and TLS flags, as advise --live takes them
		jsonOut   bool
		digest    bool
	)
	c.key = config.EmulatorKey
	fs.Var((*listFlag)(&endpoints), "endpoint", "the nodes' account endpoints, comma-separated (default https://127.0.0.1:8081/)")
	fs.StringVar(&c.key, "key", c.key, "master or read-only key, base64 (default: the Cosmos DB emulator's well-known key)")
	fs.StringVar(&c.caCert, "ca-cert", "", "PEM file of a certificate to trust besides the system's, e.g. partita-data/tls/cert.pem")
	fs.BoolVar(&c.insecure, "insecure", false, "skip TLS certificate verification (as for the emulator)")
	fs.BoolVar(&jsonOut, "json", false, "print the nodes' views as a JSON array")
	fs.BoolVar(&digest, "digest", false, "hash every replica's keyspace and compare replicas at the same applied index (reads all data)")
	if err := parseFlags(fs, args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(endpoints) == 0 {
		endpoints = []string{"https://127.0.0.1:8081/"}
	}
	key, err := auth.DecodeKey(c.key)
	if err != nil {
		fmt.Fprintf(stderr, "partita cluster status: --key: %v\n", err)
		return 2
	}
	hc, err := liveHTTPClient(c)
	if err != nil {
		fmt.Fprintf(stderr, "partita cluster status: %v\n", err)
		return 2
	}
	var views []cluster.Status
	failed := false
	for _, ep := range endpoints {
		st, err := fetchClusterStatus(ctx, hc, ep, key, digest)
		if err != nil {
			fmt.Fprintf(stderr, "partita cluster status: %s: %v\n", ep, err)
			failed = true
			continue
		}
		views = append(views, st)
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if views == nil {
			views = []cluster.Status{}
		}
		_ = enc.Encode(views)
	} else {
		writeClusterStatus(stdout, views, digest)
	}
	if digest {
		ms := cluster.CompareDigests(views)
		for _, m := range ms {
			fmt.Fprintf(stderr, "partita cluster status: %s\n", m)
		}
		if len(ms) > 0 {
			failed = true
		} else if !jsonOut {
			fmt.Fprintln(stdout, "\nreplicas at the same applied index hold the same data")
		}
	}
	if failed {
		return 1
	}
	return 0
}

// fetchClusterStatus reads one node's view, with its keyspaces' digests
// if digest, signing the request with key.
func fetchClusterStatus(ctx context.Context, hc *http.Client, endpoint string, key []byte, digest bool) (cluster.Status, error) {
	var st cluster.Status
	timeout := 10 * time.Second
	if digest {
		timeout = 5 * time.Minute // a scan of every keyspace
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/_partita/cluster", nil)
	if err != nil {
		return st, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, link, err := auth.Resource("/_partita/cluster")
	if err != nil {
		return st, err
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("Authorization", auth.MasterToken(key, http.MethodGet, typ, link, date))
	if digest {
		req.Header.Set("x-partita-cluster-digest", "true")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		return st, fmt.Errorf("%s: %s", resp.Status, e.Message)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("a malformed answer: %w", err)
	}
	return st, nil
}

// writeClusterStatus prints the views as tables, with the digests' columns
// if digest (the hash shortened to 16 hex digits; --json has it whole).
func writeClusterStatus(w io.Writer, views []cluster.Status, digest bool) {
	for i, st := range views {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "node %s (%s), %d members:", st.Node, st.Addr, len(st.Members))
		for _, m := range st.Members {
			fmt.Fprintf(w, " %s=%s", m.Node, m.Addr)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		head := "KEYSPACE\tREPLICAS\tLEADER\tLEADS\tTERM\tAPPLIED\tLSN\tSTABLE"
		if digest {
			head += "\tDIGEST AT\tKEYS\tSHA256"
		}
		fmt.Fprintln(tw, head)
		for _, k := range st.Keyspaces {
			leader := k.Leader
			if leader == "" {
				leader = "(none)"
			}
			short := make([]string, len(k.Replicas))
			for i, r := range k.Replicas {
				short[i] = fmt.Sprintf("%.8s", r)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%d\t%d\t%d\t%d", k.ID, strings.Join(short, ","), leader, k.Leading, k.Term, k.Applied, k.LSN, k.Stable)
			if d := k.Digest; d != nil {
				fmt.Fprintf(tw, "\t%d\t%d\t%.16s", d.Applied, d.Keys, d.SHA256)
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
	}
}

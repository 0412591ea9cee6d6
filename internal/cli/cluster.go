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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/cluster"
	"github.com/partitadb/partita/internal/config"
)

const clusterUsage = `Usage:
  partita cluster status --endpoint URL[,URL...] [--key KEY] [--ca-cert FILE | --insecure] [--json] [--digest]

Prints the cluster as one of its nodes sees it (GET /_partita/cluster with
x-partita-cluster-all: true): the node asks every member for its view over
the cluster's own connections, so one endpoint is enough; the others given
are asked in turn if it does not answer. It prints the members and whether
each answered the node asked (LIVE: as that node sees it), then, for every
keyspace (a physical partition's replicas, one Raft group), each replica:
its node, its role (the settled leader, a follower, or "?" when its node
did not answer), the term, the last log index it applied, the largest LSN
and the stable LSN it applied, and, from the leader's Raft progress, how
many committed entries its log lacks (LAG; "?" until a new leader has
heard where its log stands) and whether the leader heard from it within
an election timeout (ACTIVE). A member that did not answer
is reported, not an error: the command exits 0.

With --digest, each node also hashes its replica of every keyspace (a scan
of all its data), and the replicas that have applied the same log index are
compared: the command exits 1 if any differ. Replicas at different indexes
are not compared; run it again once writes have stopped.

--json prints every member's view as a JSON array, the asked node's first
(with each member's liveness in its members), a member that did not answer
with only its node, addr and error.
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
	fs.Var((*listFlag)(&endpoints), "endpoint", "a node's account endpoint; more, comma-separated, are asked in turn if it does not answer (default https://127.0.0.1:8081/)")
	fs.StringVar(&c.key, "key", c.key, "master or read-only key, base64 (default: the Cosmos DB emulator's well-known key)")
	fs.StringVar(&c.caCert, "ca-cert", "", "PEM file of a certificate to trust besides the system's, e.g. partita-data/tls/cert.pem")
	fs.BoolVar(&c.insecure, "insecure", false, "skip TLS certificate verification (as for the emulator)")
	fs.BoolVar(&jsonOut, "json", false, "print every member's view as a JSON array, the asked node's first")
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
	var (
		views []cluster.Status
		asked bool
	)
	for _, ep := range endpoints {
		vs, err := fetchClusterStatus(ctx, hc, ep, key, digest)
		if err != nil {
			fmt.Fprintf(stderr, "partita cluster status: %s: %v\n", ep, err)
			continue
		}
		views, asked = vs, true
		break
	}
	if !asked {
		return 1
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(views)
	} else {
		writeClusterStatus(stdout, views, digest)
	}
	failed := false
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

// fetchClusterStatus asks one node for every member's view, with their
// keyspaces' digests if digest, signing the request with key.
func fetchClusterStatus(ctx context.Context, hc *http.Client, endpoint string, key []byte, digest bool) ([]cluster.Status, error) {
	var st []cluster.Status
	timeout := 10 * time.Second // a member that does not answer is given 3 s
	if digest {
		timeout = 6 * time.Minute // a scan of every keyspace, by every member (5 minutes each, at once)
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
	req.Header.Set("x-partita-cluster-all", "true")
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
	if len(st) == 0 {
		return st, errors.New("an answer without the node's own view")
	}
	return st, nil
}

// writeClusterStatus prints views (the asked node's first) as two tables:
// the members with their liveness, and every keyspace's replicas, with the
// digests' columns if digest (the hash shortened to 16 hex digits; --json
// has it whole). A replica's figures come from its own node's view, its
// lag and activity from its leader's.
func writeClusterStatus(w io.Writer, views []cluster.Status, digest bool) {
	own := views[0]
	fmt.Fprintf(w, "asked node %s (%s), %d members\n", own.Node, own.Addr, len(own.Members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tADDR\tLIVE")
	for _, m := range own.Members {
		live := "?"
		switch {
		case m.Node == own.Node:
			live = "yes (asked)"
		case m.Live == nil:
		case *m.Live:
			live = "yes"
		default:
			live = "no: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Node, m.Addr, live)
	}
	_ = tw.Flush()

	// byNode: node → keyspace → its replica's status, from the node's view.
	byNode := map[string]map[uint64]cluster.KeyspaceStatus{}
	var ids []uint64
	replicas := map[uint64][]string{}
	progress := map[uint64]map[string]cluster.ReplicaProgress{} // from the leader with the highest term
	progressTerm := map[uint64]uint64{}
	for _, v := range views {
		byNode[v.Node] = map[uint64]cluster.KeyspaceStatus{}
		for _, k := range v.Keyspaces {
			byNode[v.Node][k.ID] = k
			if _, ok := replicas[k.ID]; !ok {
				ids = append(ids, k.ID)
			}
			if len(k.Replicas) > 0 {
				replicas[k.ID] = k.Replicas
			} else if _, ok := replicas[k.ID]; !ok {
				replicas[k.ID] = nil
			}
			if len(k.Progress) > 0 && k.Term >= progressTerm[k.ID] {
				progressTerm[k.ID] = k.Term
				progress[k.ID] = map[string]cluster.ReplicaProgress{}
				for _, p := range k.Progress {
					progress[k.ID][p.Node] = p
				}
			}
		}
	}
	slices.Sort(ids)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "KEYSPACE\tREPLICA\tROLE\tTERM\tAPPLIED\tLSN\tSTABLE\tLAG\tACTIVE"
	if digest {
		head += "\tDIGEST AT\tKEYS\tSHA256"
	}
	fmt.Fprintln(tw, head)
	for _, id := range ids {
		nodes := replicas[id]
		if len(nodes) == 0 { // an older member's view: the nodes listing it
			for _, v := range views {
				if _, ok := byNode[v.Node][id]; ok {
					nodes = append(nodes, v.Node)
				}
			}
		}
		for i, node := range nodes {
			ks := "" // the keyspace's id on its first row only
			if i == 0 {
				ks = fmt.Sprint(id)
			}
			row := []string{ks, fmt.Sprintf("%.8s", node), "?", "?", "?", "?", "?", "?", "?"}
			if k, ok := byNode[node][id]; ok {
				row[2] = "follower"
				if k.Leading {
					row[2] = "leader"
				}
				row[3], row[4], row[5], row[6] = fmt.Sprint(k.Term), fmt.Sprint(k.Applied), fmt.Sprint(k.LSN), fmt.Sprint(k.Stable)
			}
			if p, ok := progress[id][node]; ok {
				row[8] = "no"
				if p.Known {
					row[7] = fmt.Sprint(p.Lag)
				}
				if p.Active {
					row[8] = "yes"
				}
			}
			if digest {
				row = append(row, "", "", "")
				if k, ok := byNode[node][id]; ok && k.Digest != nil {
					d := k.Digest
					row[9], row[10], row[11] = fmt.Sprint(d.Applied), fmt.Sprint(d.Keys), fmt.Sprintf("%.16s", d.SHA256)
				}
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	_ = tw.Flush()
}

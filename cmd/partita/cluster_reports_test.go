package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/config"
)

// TestClusterReports: request units are charged where a request is
// evaluated (writes on their partition's leader, Eventual reads on the node
// that serves them), so each node counts only its share. The partitions
// report through any node adds every node's counts: its chargedRU is what
// the client was charged in all, whichever nodes served it. Each node's
// /metrics exports its own counts and its replicas' Raft state: summed over
// the nodes, the request units are the same total, and every keyspace has
// exactly one leader.
func TestClusterReports(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	metricsAddrs := freeAddrs(t, len(nodes), false)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			errs[i] = startNode(t, bin, nodes, i, "--metrics-addr", metricsAddrs[i], "--consistency", "Eventual")
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	createContainer(t, nodes[0], 12000) // two physical partitions

	// Writes through every node (forwarded to their leaders), reads through
	// every node (served where they arrive).
	var charged float64
	for i := range 30 {
		cc := nodes[i%3].container(t, "db", "c")
		id := fmt.Sprintf("i%02d", i)
		pk := azcosmos.NewPartitionKeyString("p" + strconv.Itoa(i%7))
		err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
			r, err := cc.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":%q,"pk":"p%d"}`, id, i%7), nil)
			if err == nil {
				charged += float64(r.RequestCharge)
			}
			charged += failedCharge(err)
			return err
		})
		if err != nil {
			t.Fatalf("upsert %s: %v", id, err)
		}
		for j := range nodes {
			err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
				r, err := nodes[j].container(t, "db", "c").ReadItem(ctx, pk, id, nil)
				if err == nil {
					charged += float64(r.RequestCharge)
				}
				// An Eventual read of a replica behind the write is a
				// 404 that costs its minimum, and the report counts it.
				charged += failedCharge(err)
				return err
			})
			if err != nil {
				t.Fatalf("read %s via node %d: %v", id, j+1, err)
			}
		}
	}

	type report struct {
		Partitions []struct {
			ID          string  `json:"id"`
			ChargedRU   float64 `json:"chargedRU"`
			TopKeysByRU []struct {
				Key    string  `json:"key"`
				Weight float64 `json:"weight"`
			} `json:"topKeysByRU"`
		} `json:"partitions"`
		Nodes            int               `json:"nodes"`
		UnreachableNodes []json.RawMessage `json:"unreachableNodes"`
	}
	for i, n := range nodes {
		body := signedGet(t, n, "/_partita/dbs/db/colls/c/partitions")
		var rep report
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatalf("node %d: partitions report: %v\n%s", i+1, err, body)
		}
		total := 0.0
		for _, p := range rep.Partitions {
			total += p.ChargedRU
		}
		if rep.Nodes != 3 || len(rep.UnreachableNodes) != 0 || math.Abs(total-charged) > 0.01 {
			t.Errorf("node %d: partitions report adds %d nodes' counts (unreachable %s), charged %.2f RU; the client was charged %.2f\n%s",
				i+1, rep.Nodes, rep.UnreachableNodes, total, charged, body)
		}
	}

	// /metrics, per node: request units summed over the nodes are the
	// total; every keyspace has exactly one leader among them.
	ruLine := regexp.MustCompile(`(?m)^partita_partition_request_units_total\{[^}]*container="c"[^}]*\} (\S+)$`)
	leadLine := regexp.MustCompile(`(?m)^partita_keyspace_leading\{keyspace="(\d+)"\} (\S+)$`)
	lagLine := regexp.MustCompile(`(?m)^partita_keyspace_replica_lag_entries\{keyspace="(\d+)",replica="([0-9a-f]+)"\} (\S+)$`)
	activeLine := regexp.MustCompile(`(?m)^partita_keyspace_replica_active\{keyspace="(\d+)",replica="([0-9a-f]+)"\} (\S+)$`)
	var (
		sum     float64
		leaders map[string]float64
		lagging []string       // replicas reported behind or inactive
		tracked map[string]int // keyspace → replicas its leader reports
	)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		sum, leaders, lagging, tracked = 0, map[string]float64{}, nil, map[string]int{}
		for i, a := range metricsAddrs {
			resp, err := http.Get("http://" + a + "/metrics")
			if err != nil {
				t.Fatalf("node %d: /metrics: %v", i+1, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, m := range ruLine.FindAllStringSubmatch(string(body), -1) {
				v, _ := strconv.ParseFloat(m[1], 64)
				sum += v
			}
			for _, m := range leadLine.FindAllStringSubmatch(string(body), -1) {
				v, _ := strconv.ParseFloat(m[2], 64)
				leaders[m[1]] += v
			}
			// The leaders report each replica's lag: none once the
			// writes have stopped, and every replica active.
			for _, m := range lagLine.FindAllStringSubmatch(string(body), -1) {
				tracked[m[1]]++
				if m[3] != "0" {
					lagging = append(lagging, fmt.Sprintf("keyspace %s: replica %s lags %s entries", m[1], m[2], m[3]))
				}
			}
			for _, m := range activeLine.FindAllStringSubmatch(string(body), -1) {
				if m[3] != "1" {
					lagging = append(lagging, fmt.Sprintf("keyspace %s: replica %s inactive", m[1], m[2]))
				}
			}
		}
		ok := len(leaders) > 0 && len(lagging) == 0 && len(tracked) == len(leaders)
		for ks, v := range leaders {
			ok = ok && v == 1 && tracked[ks] == 3
		}
		if ok || time.Now().After(deadline) {
			break
		}
	}
	if math.Abs(sum-charged) > 0.01 {
		t.Errorf("/metrics: request units summed over the nodes %.2f, the client was charged %.2f", sum, charged)
	}
	for ks, v := range leaders {
		if v != 1 {
			t.Errorf("/metrics: keyspace %s has %v leaders among the nodes, want 1", ks, v)
		}
	}
	if len(leaders) == 0 {
		t.Error("/metrics: no partita_keyspace_leading series")
	}
	for ks := range leaders {
		if tracked[ks] != 3 {
			t.Errorf("/metrics: keyspace %s: its leader reports the lag of %d replicas, want 3", ks, tracked[ks])
		}
	}
	for _, l := range lagging {
		t.Errorf("/metrics, with the writes done: %s", l)
	}
}

// signedGet sends a GET signed with the master key to node n and returns
// the body of its 200 answer.
func signedGet(t *testing.T, n *clusterNode, path string) []byte {
	t.Helper()
	key, _ := auth.DecodeKey(config.EmulatorKey)
	typ, link, err := auth.Resource(path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, n.endpoint+path[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", auth.MasterToken(key, http.MethodGet, typ, link, date))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test server's own certificate
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// failedCharge is the request charge of a failed request's response (0
// for none, or no response).
func failedCharge(err error) float64 {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	if !ok || re.RawResponse == nil {
		return 0
	}
	ru, _ := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-request-charge"), 64)
	return ru
}

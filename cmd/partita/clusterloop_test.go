package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/anishathalye/porcupine"

	"github.com/partitadb/partita/internal/cluster"
)

// clusterCycles is how many kill -9 cycles TestClusterKillLoop runs:
// PARTITA_CLUSTER_CYCLES (make clusterloop), else 2.
func clusterCycles(t *testing.T) int {
	if v := os.Getenv("PARTITA_CLUSTER_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PARTITA_CLUSTER_CYCLES=%q: want a positive number", v)
		}
		return n
	}
	return 2
}

// clusterNodes is how many members TestClusterKillLoop runs:
// PARTITA_CLUSTER_NODES (make clusterloop CLUSTER_NODES=n), else 3. With
// more than three, each partition has three replicas (--replicas 3), so
// that nodes read partitions they hold no replica of remotely.
func clusterNodes(t *testing.T) int {
	if v := os.Getenv("PARTITA_CLUSTER_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 {
			t.Fatalf("PARTITA_CLUSTER_NODES=%q: want 3 or more", v)
		}
		return n
	}
	return 3
}

// regOp is one operation of the kill loop's history: a write of value to
// key, or a read of key that found value (0: no item).
type regOp struct {
	key   int
	write bool
	value int
}

// registers is porcupine's model of the kill loop: one register per key,
// each checked apart.
var registers = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(regOp).key
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regOp)
		if in.write {
			return true, in.value
		}
		return output.(int) == state.(int), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regOp)
		if in.write {
			return fmt.Sprintf("put(k%d, %d)", in.key, in.value)
		}
		return fmt.Sprintf("get(k%d) → %v", in.key, output)
	},
}

// TestClusterKillLoop runs a three-node cluster (PARTITA_CLUSTER_NODES) of
// real processes under a
// load of azcosmos upserts and Strong reads through every live node, and
// each cycle kills a random node with SIGKILL, then restarts it, or pauses
// it with SIGSTOP for as long, then resumes it (SIGCONT), or, with the
// members in network namespaces (PARTITA_CLUSTER_NETNS=1), cuts it off
// from the others for a while, its clients still sending to it. The
// history (every operation's call and return times; a write whose outcome
// the client cannot know counts as pending) must be linearizable per key
// (porcupine), and at the end every node must serve the last value of every
// key. make test runs 2 cycles; make clusterloop CLUSTER_CYCLES=n runs n.
func TestClusterKillLoop(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	cycles := clusterCycles(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	bin := build(t)
	nodes := newCluster(t, clusterNodes(t))
	// Partitions split at 64 KiB, so that the filler below makes the
	// container split and its children move to groups of their own
	// (separations) while nodes are killed.
	flags := []string{"--consistency", "Strong", "--partition-max-bytes=65536"}
	ru := int32(0) // one partition
	if len(nodes) > 3 {
		// Three replicas of each partition, and from the start as many
		// partitions as nodes, each of which some node reads remotely.
		flags = append(flags, "--replicas", "3")
		ru = int32(6000 * len(nodes))
	}
	startAll(t, bin, nodes, flags...)
	ctx := t.Context()

	createContainer(t, nodes[0], ru)

	// The live nodes' containers; a killed node's slot is nil.
	var mu sync.Mutex
	live := make([]*azcosmos.ContainerClient, len(nodes))
	for i, n := range nodes {
		live[i] = loopContainer(t, n)
	}
	pick := func(r *rand.Rand) (int, *azcosmos.ContainerClient) {
		mu.Lock()
		defer mu.Unlock()
		for {
			i := r.IntN(len(live))
			if live[i] != nil {
				return i, live[i]
			}
		}
	}

	const keys, workers = 6, 4
	var (
		histMu  sync.Mutex
		history []porcupine.Operation
		values  atomic.Int64
		counts  [4]atomic.Int64 // acknowledged writes, unknown writes, reads, failed reads
	)
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	record := func(client int, in regOp, out any, call, ret int64) {
		histMu.Lock()
		history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
		histMu.Unlock()
	}
	var (
		filled    sync.Map // filler items acknowledged: id → pk
		fillerSeq atomic.Int64
	)
	pad := strings.Repeat("f", 700)
	// Session guarantees: each session worker writes its own item through
	// a random live node, then reads it with the write's session token
	// at session consistency through another: it must see its write
	// (read your writes), whichever node serves it.
	const sessions = 2
	var (
		sessionMu         sync.Mutex
		sessionVal        [sessions]int
		sessionChecked    atomic.Int64
		sessionViolations []string
	)
	session := azcosmos.ConsistencyLevelSession
	load := func(until time.Time) {
		var wg sync.WaitGroup
		for s := range sessions {
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(200+s)))
			wg.Go(func() {
				id := "s" + strconv.Itoa(s)
				pk := azcosmos.NewPartitionKeyString(id)
				for time.Now().Before(until) && ctx.Err() == nil {
					sessionVal[s]++ // this worker's alone
					v := sessionVal[s]
					wn, wc := pick(r)
					octx, cancel := context.WithTimeout(ctx, 15*time.Second)
					resp, err := wc.UpsertItem(octx, pk, fmt.Appendf(nil, `{"id":%q,"pk":%q,"v":%d}`, id, id, v), nil)
					if err != nil || resp.SessionToken == nil {
						cancel()
						continue // outcome unknown: nothing to check against
					}
					rn, rc := pick(r)
					rr, err := rc.ReadItem(octx, pk, id, &azcosmos.ItemOptions{SessionToken: resp.SessionToken, ConsistencyLevel: &session})
					cancel()
					var re *azcore.ResponseError
					switch {
					case errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.RawResponse.Header.Get("x-ms-substatus") != "1002":
						sessionMu.Lock()
						sessionViolations = append(sessionViolations, fmt.Sprintf("%s: read through node %d with the token %s of the write of v=%d through node %d: not found (%s)", id, rn+1, *resp.SessionToken, v, wn+1, time.Now().Format(time.StampMilli)))
						sessionMu.Unlock()
					case err != nil:
						// Not served (the node died, or has not caught up
						// in time: 404/1002): no answer to check.
					default:
						var d struct {
							V int `json:"v"`
						}
						_ = json.Unmarshal(rr.Value, &d)
						sessionChecked.Add(1)
						if d.V < v {
							sessionMu.Lock()
							sessionViolations = append(sessionViolations, fmt.Sprintf("%s: read through node %d with the token %s of the write of v=%d through node %d found v=%d (%s)", id, rn+1, *resp.SessionToken, v, wn+1, d.V, time.Now().Format(time.StampMilli)))
							sessionMu.Unlock()
						}
					}
				}
			})
		}
		// The filler: about 40 creates a second of 700-byte items in six
		// logical partitions of their own, through random live nodes.
		fr := rand.New(rand.NewPCG(rng.Uint64(), 99))
		wg.Go(func() {
			for time.Now().Before(until) && ctx.Err() == nil {
				i := fillerSeq.Add(1)
				id, pk := fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i%6)
				_, cc := pick(fr)
				octx, cancel := context.WithTimeout(ctx, 15*time.Second)
				if _, err := cc.CreateItem(octx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"pad":%q}`, id, pk, pad), nil); err == nil {
					filled.Store(id, pk)
				}
				cancel()
				time.Sleep(25 * time.Millisecond)
			}
		})
		for w := range workers {
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Go(func() {
				for time.Now().Before(until) && ctx.Err() == nil {
					key := r.IntN(keys)
					node, cc := pick(r)
					pk := azcosmos.NewPartitionKeyString("k" + strconv.Itoa(key))
					octx, cancel := context.WithTimeout(ctx, 15*time.Second)
					call := now()
					if r.IntN(2) == 0 {
						v := int(values.Add(1))
						body := fmt.Appendf(nil, `{"id":"k%d","pk":"k%d","v":%d}`, key, key, v)
						_, err := cc.UpsertItem(octx, pk, body, nil)
						if err == nil {
							counts[0].Add(1)
							record(w, regOp{key: key, write: true, value: v}, nil, call, now())
						} else {
							// Any failure may have applied (a timeout, a lost
							// leadership): pending until the end.
							counts[1].Add(1)
							record(w, regOp{key: key, write: true, value: v}, nil, call, math.MaxInt64)
						}
					} else {
						v, err := readValue(octx, cc, key)
						if err == nil {
							counts[2].Add(1)
							record(w, regOp{key: key}, v, call, now())
						} else if counts[3].Add(1) <= 5 {
							t.Logf("read of k%d through node %d failed: %v", key, node+1, err)
						}
					}
					cancel()
				}
			})
		}
		wg.Wait()
	}

	// The change feed, followed through random live nodes all along.
	feed := newFeedFollower()
	fctx, stopFeed := context.WithCancel(ctx)
	fr := rand.New(rand.NewPCG(rng.Uint64(), 98))
	var feedDone sync.WaitGroup
	feedDone.Go(func() {
		feed.follow(fctx, func() *azcosmos.ContainerClient {
			_, cc := pick(fr)
			return cc
		})
	})
	for cycle := range cycles {
		load(time.Now().Add(1500 * time.Millisecond))
		victim := rng.IntN(len(nodes))
		if netnsMode() && rng.IntN(3) == 0 {
			// Cut off from its peers, not from its clients: whatever it
			// acknowledges, its peers must have (no split brain).
			if err := cutOff(nodes, victim); err != nil {
				t.Fatal(err)
			}
			t.Logf("cycle %d: cut node %d off from the others", cycle+1, victim+1)
			load(time.Now().Add(3 * time.Second))
			if err := heal(nodes); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mu.Lock()
		live[victim] = nil
		mu.Unlock()
		if rng.IntN(2) == 0 {
			// Paused, not killed: when it resumes it may still believe it
			// leads, and its clients' requests in flight go on.
			if err := nodes[victim].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Logf("cycle %d: paused node %d (SIGSTOP)", cycle+1, victim+1)
			load(time.Now().Add(2 * time.Second))
			if err := nodes[victim].cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		} else {
			nodes[victim].kill()
			t.Logf("cycle %d: killed node %d", cycle+1, victim+1)
			load(time.Now().Add(2 * time.Second))
			if err := startNode(t, bin, nodes, victim, flags...); err != nil {
				t.Fatal(err)
			}
		}
		cc := loopContainer(t, nodes[victim])
		mu.Lock()
		live[victim] = cc
		mu.Unlock()
	}
	load(time.Now().Add(time.Second))
	stopFeed()
	feedDone.Wait()

	// Every node serves every key's value: read through each, as part of
	// the history.
	final := make([]int, keys)
	for i, n := range nodes {
		cc := loopContainer(t, n)
		for key := range keys {
			call := now()
			var v int
			err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
				var err error
				v, err = readValue(ctx, cc, key)
				return err
			})
			if err != nil {
				t.Fatalf("final read of k%d through node %d: %v", key, i+1, err)
			}
			record(100+i, regOp{key: key}, v, call, now())
			final[key] = v
		}
	}
	t.Logf("%d writes acknowledged, %d unknown; %d reads, %d failed", counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load())
	// Every acknowledged filler item, through every node.
	hc := trustingClient(t, nodes[0].data)
	t.Logf("%d filler items acknowledged; %d ranges, %d keyspaces", count(&filled), len(pkRangesOf(t, hc, nodes[0].endpoint, "c")), keyspacesListed(t, bin, nodes))
	for i, n := range nodes {
		found := map[string]bool{}
		for _, id := range queryIDs(t, loopContainer(t, n)) {
			found[id] = true
		}
		filled.Range(func(id, _ any) bool {
			if !found[id.(string)] {
				t.Errorf("acknowledged filler item %s not found through node %d", id, i+1)
			}
			return true
		})
	}
	if counts[0].Load() == 0 || counts[2].Load() == 0 {
		t.Fatal("the load did not run")
	}
	// The change feed: drained through each node in turn with the
	// continuation it had reached, it has delivered every item's last
	// version (each register's final value, every filler item), and no
	// item's versions out of order or twice.
	for i, n := range nodes {
		if err := feed.drain(ctx, loopContainer(t, n)); err != nil {
			t.Fatalf("draining the change feed through node %d: %v", i+1, err)
		}
	}
	t.Logf("change feed: %d pages, %d items delivered; %d session reads checked", feed.pages, len(feed.lsns), sessionChecked.Load())
	for _, v := range sessionViolations {
		t.Errorf("session: %s", v)
	}
	if sessionChecked.Load() == 0 {
		t.Error("no session read was checked")
	}
	for _, v := range feed.violations {
		t.Errorf("change feed: %s", v)
	}
	for key := range keys {
		id := "k" + strconv.Itoa(key)
		if got, ok := feed.lastV[id]; final[key] != 0 && (!ok || got != final[key]) {
			t.Errorf("change feed: %s last delivered with v=%d (delivered: %v), its final value is %d", id, got, ok, final[key])
		}
	}
	filled.Range(func(id, _ any) bool {
		if len(feed.lsns[id.(string)]) == 0 {
			t.Errorf("change feed: acknowledged filler item %s never delivered", id)
		}
		return true
	})
	// The replicas are identical: once every node has applied the same
	// log, their keyspaces hash the same.
	checkReplicasIdentical(t, bin, nodes)
	res, info := porcupine.CheckOperationsVerbose(registers, history, 2*time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("porcupine timed out: the history (%d operations) was not fully checked", len(history))
	default:
		f, err := os.CreateTemp("", "partita-clusterloop-*.html")
		if err == nil {
			_ = porcupine.Visualize(registers, info, f)
			f.Close()
		}
		t.Fatalf("the history is not linearizable (seed %d); visualization: %s", seed, f.Name())
	}
	// Every member's data directory, stopped, is consistent.
	checkMembers(t, bin, nodes)
}

// loopContainer returns container db/c through node n with a client that
// gives up fast on a dead node (the load picks another).
func loopContainer(t *testing.T, n *clusterNode) *azcosmos.ContainerClient {
	t.Helper()
	c := client(t, n.endpoint, n.data)
	cc, err := c.NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// readValue reads key's item through cc: its "v", or 0 when it does not
// exist.
func readValue(ctx context.Context, cc *azcosmos.ContainerClient, key int) (int, error) {
	resp, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("k"+strconv.Itoa(key)), "k"+strconv.Itoa(key), nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var doc struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(resp.Value, &doc); err != nil {
		return 0, err
	}
	return doc.V, nil
}

// checkReplicasIdentical waits until every node reports the same applied
// index of every keyspace (at most 30 s: with writes stopped, a leader
// publishes at most one more stable mark), then has every node hash its
// replicas (partita cluster status --digest) and fails naming each
// keyspace whose replicas differ at that index.
func checkReplicasIdentical(t *testing.T, bin string, nodes []*clusterNode) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		lag := appliedLag(clusterViews(t, bin, nodes, false), len(nodes))
		if lag == "" {
			views := clusterViews(t, bin, nodes, true)
			// Digests are read after the statuses: check that they are of
			// the same index everywhere too (a write in between: again).
			if lag = digestLag(views, len(nodes)); lag == "" {
				for _, m := range cluster.CompareDigests(views) {
					t.Errorf("the replicas differ: %s (%s)", m, nodeNames(views, nodes))
				}
				t.Logf("replicas compared after %v: %s", time.Since(start).Round(time.Millisecond), digestSummary(views))
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' applied indexes did not converge within 30 s: %s", lag)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clusterViews runs partita cluster status --json (with --digest if
// digest) with nodes' endpoints, and returns the views of nodes (the
// answer holds every member's; a member that did not answer the node
// asked has none): each must have answered.
func clusterViews(t *testing.T, bin string, nodes []*clusterNode, digest bool) []cluster.Status {
	t.Helper()
	eps := make([]string, len(nodes))
	for i, n := range nodes {
		eps[i] = n.endpoint
	}
	args := []string{"cluster", "status", "--insecure", "--json", "--endpoint", strings.Join(eps, ",")}
	if digest {
		args = append(args, "--digest")
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var all, views []cluster.Status
	jerr := json.Unmarshal(out, &all)
	for _, v := range all {
		if slices.ContainsFunc(nodes, func(n *clusterNode) bool { return n.clusterAddr == v.Addr }) && v.Error == "" {
			views = append(views, v)
		}
	}
	if jerr != nil || len(views) != len(nodes) {
		// With --digest, exit status 1 may only report differing
		// replicas, which the caller finds in the views.
		t.Fatalf("partita %s: %v, %d of the nodes' views (%v)\n%s%s", strings.Join(args, " "), err, len(views), jerr, out, stderr.Bytes())
	}
	return views
}

// appliedLag describes how the views disagree on the keyspaces' applied
// indexes ("" when each keyspace is listed at the same index by as many of
// the n views as it has replicas).
func appliedLag(views []cluster.Status, n int) string {
	applied := map[uint64]map[uint64][]string{} // keyspace → index → nodes
	for _, v := range views {
		for _, k := range v.Keyspaces {
			if applied[k.ID] == nil {
				applied[k.ID] = map[uint64][]string{}
			}
			applied[k.ID][k.Applied] = append(applied[k.ID][k.Applied], v.Node)
		}
	}
	return lagOf(applied, replicaCounts(views, n))
}

// replicaCounts returns how many replicas each keyspace the views list
// has: as many as its status names, or n.
func replicaCounts(views []cluster.Status, n int) map[uint64]int {
	want := map[uint64]int{}
	for _, v := range views {
		for _, k := range v.Keyspaces {
			want[k.ID] = n
			if len(k.Replicas) > 0 {
				want[k.ID] = min(n, len(k.Replicas))
			}
		}
	}
	return want
}

// digestLag is appliedLag of the digests' indexes.
func digestLag(views []cluster.Status, n int) string {
	applied := map[uint64]map[uint64][]string{}
	for _, v := range views {
		for _, k := range v.Keyspaces {
			if k.Digest == nil {
				continue
			}
			if applied[k.ID] == nil {
				applied[k.ID] = map[uint64][]string{}
			}
			applied[k.ID][k.Digest.Applied] = append(applied[k.ID][k.Digest.Applied], v.Node)
		}
	}
	return lagOf(applied, replicaCounts(views, n))
}

func lagOf(applied map[uint64]map[uint64][]string, want map[uint64]int) string {
	if len(applied) == 0 {
		return "no keyspace listed"
	}
	var lags []string
	for ks, at := range applied {
		if len(at) == 1 {
			for _, nodes := range at {
				if len(nodes) == want[ks] {
					continue
				}
				lags = append(lags, fmt.Sprintf("keyspace %d: listed by %d nodes, want %d", ks, len(nodes), want[ks]))
			}
			continue
		}
		lags = append(lags, fmt.Sprintf("keyspace %d: applied indexes %v", ks, at))
	}
	slices.Sort(lags)
	return strings.Join(lags, "; ")
}

// digestSummary lists each keyspace's index, key count and hash (of the
// first view) for the log.
func digestSummary(views []cluster.Status) string {
	var parts []string
	for _, k := range views[0].Keyspaces {
		if d := k.Digest; d != nil {
			parts = append(parts, fmt.Sprintf("keyspace %d at %d: %d keys, sha256 %.16s", k.ID, d.Applied, d.Keys, d.SHA256))
		}
	}
	return strings.Join(parts, "; ")
}

// nodeNames says which test node (1, 2, 3) each node id of views is.
func nodeNames(views []cluster.Status, nodes []*clusterNode) string {
	var names []string
	for _, v := range views {
		for i, n := range nodes {
			if v.Addr == n.clusterAddr {
				names = append(names, fmt.Sprintf("node %s is node %d", v.Node, i+1))
			}
		}
	}
	return strings.Join(names, ", ")
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// Power loss (finding 9). kill -9 only ends the process: the kernel still
// writes its page cache. TestPowerLoss loses what was not synced, with
// Pebble's crash-simulating filesystem (vfs.NewCrashableMem): a crash clone
// (MemFS.CrashClone) keeps what was synced and, at random, part of what was
// not (UnsyncedDataPercent).
//
// Each cycle opens the engine (durability sync) on the previous cycle's
// clone and checks it, then runs writers from several goroutines (single
// writes, transactional batches, stored procedures, batches that delete an
// earlier transaction's items, batches that rewrite them) and takes a crash
// clone after a random number of acknowledged operations. The check:
//
//   - every transaction is whole: all of its items or none, and a rewrite
//     left every item of its transaction at one version;
//   - every operation acknowledged before the crash is there: its items,
//     its deletion, its rewrite (or a later one);
//   - nothing unknown exists;
//   - the derived structures agree with the items: the index (a range
//     query on /n), the change feed, and the logical partition statistics
//     (the partition report's item counts and bytes).
//
// POWERLOSS_CYCLES sets the number of cycles (default 8) and POWERLOSS_SEED
// the seed (default: the clock). The seed fixes every random choice; the
// goroutines' interleaving still varies, so a replay is close, not exact.
// make powerloss runs a long one.

const (
	plWorkers = 4
	plPKs     = 3  // logical partitions, shared by the workers
	plMaxLive = 25 // a worker with this many live transactions prefers deleting
)

// plTxn is one operation of the workload: it creates items (write, batch,
// sproc), deletes a transaction's items and leaves a marker item (delete),
// or rewrites a transaction's items at a new version (touch).
type plTxn struct {
	id     string
	worker int
	pk     string
	kind   string
	n      int    // items it creates: 1 for a delete's marker, 0 for a touch
	victim *plTxn // delete, touch
	acked  bool   // guarded by plRun.mu
}

// plLive is a creating transaction present at the start of a cycle.
type plLive struct {
	txn *plTxn
	v   string // the touch its items carry ("" for none)
}

// plRun is one cycle's workload and what it was told.
type plRun struct {
	mu      sync.Mutex
	txns    map[string]*plTxn   // every operation issued this cycle
	touches map[string][]*plTxn // victim id → its touches, in issue order
	errs    []string            // operations that failed: never expected
}

func TestPowerLoss(t *testing.T) {
	cycles, maxOps := 8, 60
	if v := os.Getenv("POWERLOSS_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("POWERLOSS_CYCLES=%q: want a positive number", v)
		}
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("POWERLOSS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("POWERLOSS_SEED=%q: want a number", v)
		}
		seed = n
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: replay with POWERLOSS_SEED=%d", seed, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	live := map[string]*plLive{}
	known := map[string]*plTxn{} // every transaction ever issued
	var violations []string
	issued, ackedBefore := 0, 0
	start := time.Now()
	// The cycle before's workload and what of it was acknowledged before
	// its crash clone, for the check after the reopen.
	var lastRun *plRun
	var lastAcked map[string]bool

	for cycle := 0; cycle <= cycles; cycle++ {
		st, err := store.Open(store.Options{Dir: "data", FS: fs, Sync: true})
		if err != nil {
			t.Fatalf("cycle %d: open the crash clone: %v (seed %d)", cycle, err, seed)
		}
		e, err := openOn(t, ctx, st, Config{GatewayQueryFull: true}, nil, nil)
		if err != nil {
			t.Fatalf("cycle %d: open the engine on the crash clone: %v (seed %d)", cycle, err, seed)
		}
		if cycle == 0 {
			plSetup(t, e)
		}
		if cycle > 0 {
			var v []string
			live, v = plCheck(ctx, e, live, known, lastRun, lastAcked)
			for _, s := range v {
				violations = append(violations, fmt.Sprintf("cycle %d: %s", cycle, s))
			}
		}
		if cycle == cycles {
			_ = st.Close()
			break
		}
		run := &plRun{txns: map[string]*plTxn{}, touches: map[string][]*plTxn{}}
		crashAt := 1 + rng.IntN(maxOps)
		acked := make(chan struct{}, 1024) // workers never wait on the crash taker
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range plWorkers {
			var mine []*plTxn
			for _, l := range live {
				if l.txn.worker == w {
					mine = append(mine, l.txn)
				}
			}
			slices.SortFunc(mine, func(a, b *plTxn) int { return strings.Compare(a.id, b.id) })
			wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Go(func() { plWorker(ctx, e, run, cycle, w, wrng, mine, acked, stop) })
		}
		for range crashAt {
			<-acked
		}
		// What was acknowledged before the clone must survive it.
		run.mu.Lock()
		before := map[string]bool{}
		for id, tx := range run.txns {
			if tx.acked {
				before[id] = true
			}
		}
		run.mu.Unlock()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: []int{0, 10, 50, 90, 100}[rng.IntN(5)], RNG: rand.New(rand.NewPCG(rng.Uint64(), 1))})
		close(stop)
		wg.Wait()
		if err := st.Close(); err != nil {
			t.Fatalf("cycle %d: close: %v", cycle, err)
		}
		for _, s := range run.errs {
			violations = append(violations, fmt.Sprintf("cycle %d: %s", cycle, s))
		}
		for id, tx := range run.txns {
			known[id] = tx
		}
		issued += len(run.txns)
		ackedBefore += len(before)
		lastRun, lastAcked = run, before
		fs = clone
	}
	t.Logf("power loss: %d cycles, %d operations checked (%d acknowledged before their crash), %d violations, seed %d, %s",
		cycles, issued, ackedBefore, len(violations), seed, time.Since(start).Round(time.Millisecond))
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... and %d more", len(violations)-20)
			break
		}
		t.Error(v)
	}
}

// plWriteN creates n items of transaction txn in logical partition pk.
const plWriteN = `function (txn, n, pk, pad) {
	var coll = getContext().getCollection();
	for (var i = 0; i < n; i++) {
		if (!coll.createDocument(coll.getSelfLink(), {id: txn + "-" + i, pk: pk, txn: txn, n: n, pad: pad})) throw new Error("not accepted");
	}
}`

func plSetup(t *testing.T, e *Engine) {
	t.Helper()
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	// 24,000 RU/s: four physical partitions.
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"compositeIndexes":[[{"path":"/n"},{"path":"/txn","order":"descending"}],[{"path":"/pk"},{"path":"/v"}]]}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(map[string]string{"id": "writeN", "body": plWriteN})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
}

func plPK(pk string) document.PartitionKey {
	return document.PartitionKey{{Kind: document.String, String: pk}}
}

func plItem(id, pk, txn string, n int, v, extra, pad string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "pk": pk, "txn": txn, "n": n, "v": v, "deletes": extra, "pad": pad})
	return b
}

// plWorker issues operations until stop, one at a time; mine are the live
// transactions it created (it alone deletes and rewrites them).
func plWorker(ctx context.Context, e *Engine, run *plRun, cycle, w int, rng *rand.Rand, mine []*plTxn, acked chan<- struct{}, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		tx := &plTxn{id: fmt.Sprintf("c%d-w%d-%d", cycle, w, i), worker: w, pk: fmt.Sprint("p", rng.IntN(plPKs))}
		pad := strings.Repeat("x", rng.IntN(3000))
		kind := rng.IntN(10)
		if len(mine) >= plMaxLive {
			kind = 9
		}
		switch {
		case kind >= 7 && len(mine) > 0: // delete or rewrite one of mine
			j := rng.IntN(len(mine))
			tx.victim, tx.pk = mine[j], mine[j].pk
			if kind == 7 {
				tx.kind = "touch"
			} else {
				tx.kind, tx.n = "delete", 1
				mine = slices.Delete(mine, j, j+1)
			}
		case kind < 3:
			tx.kind, tx.n = "write", 1
		case kind < 5:
			tx.kind, tx.n = "batch", 2+rng.IntN(5)
		default:
			tx.kind, tx.n = "sproc", 2+rng.IntN(5)
		}
		run.mu.Lock()
		run.txns[tx.id] = tx
		if tx.kind == "touch" {
			run.touches[tx.victim.id] = append(run.touches[tx.victim.id], tx)
		}
		run.mu.Unlock()
		err := plApply(ctx, e, tx, pad)
		run.mu.Lock()
		if err != nil {
			run.errs = append(run.errs, fmt.Sprintf("%s %s: %v", tx.kind, tx.id, err))
		} else {
			tx.acked = true
		}
		run.mu.Unlock()
		if err != nil {
			continue
		}
		if tx.kind == "write" || tx.kind == "batch" || tx.kind == "sproc" {
			mine = append(mine, tx)
		}
		select {
		case acked <- struct{}{}:
		default:
		}
	}
}

// plApply runs one operation.
func plApply(ctx context.Context, e *Engine, tx *plTxn, pad string) error {
	pk := plPK(tx.pk)
	batch := func(ops []BatchOp) error {
		res, err := e.ExecuteBatch(ctx, "db", "k", pk, ops)
		if err == nil && !res.OK {
			err = fmt.Errorf("batch failed: %+v", res.Results)
		}
		return err
	}
	switch tx.kind {
	case "write":
		_, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: plItem(tx.id+"-0", tx.pk, tx.id, 1, "", "", pad)})
		return err
	case "batch":
		var ops []BatchOp
		for i := range tx.n {
			ops = append(ops, BatchOp{Type: "Create", Body: plItem(fmt.Sprintf("%s-%d", tx.id, i), tx.pk, tx.id, tx.n, "", "", pad)})
		}
		return batch(ops)
	case "sproc":
		args, _ := json.Marshal([]any{tx.id, tx.n, tx.pk, pad})
		_, err := e.ExecuteStoredProcedure(ctx, "db", "k", "writeN", pk, args, false)
		return err
	case "delete":
		var ops []BatchOp
		for i := range tx.victim.n {
			ops = append(ops, BatchOp{Type: "Delete", ID: fmt.Sprintf("%s-%d", tx.victim.id, i)})
		}
		ops = append(ops, BatchOp{Type: "Create", Body: plItem(tx.id+"-0", tx.pk, tx.id, 1, "", tx.victim.id, "")})
		return batch(ops)
	case "touch":
		var ops []BatchOp
		for i := range tx.victim.n {
			ops = append(ops, BatchOp{Type: "Upsert", Body: plItem(fmt.Sprintf("%s-%d", tx.victim.id, i), tx.pk, tx.victim.id, tx.victim.n, tx.id, "", pad)})
		}
		return batch(ops)
	}
	return fmt.Errorf("unknown kind %q", tx.kind)
}

// plDoc is an item as the check reads it.
type plDoc struct {
	ID, PK, Txn, V, Deletes string
	N                       int
	size                    int
}

// plCheck reads everything on the reopened engine and checks it against
// what the cycle before the crash did: live (what the check before found),
// run (the cycle's operations) and acked (those acknowledged before the
// crash clone). It returns what is live now and the violations.
func plCheck(ctx context.Context, e *Engine, live map[string]*plLive, known map[string]*plTxn, run *plRun, acked map[string]bool) (map[string]*plLive, []string) {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	// Every derived entry matches the items, and no entry is left over.
	if report, err := e.Check(ctx); err != nil {
		fail("check: %v", err)
	} else if !report.OK() {
		fail("check:\n%s", report)
	}
	var docs []plDoc
	for cont := ""; ; {
		p, err := e.ReadFeed(ctx, "db", "k", Scope{}, 1000, cont)
		if err != nil {
			return live, append(bad, fmt.Sprintf("read feed: %v", err))
		}
		for _, raw := range p.Items {
			var d plDoc
			if err := json.Unmarshal(raw, &d); err != nil {
				fail("item %s: %v", raw, err)
				continue
			}
			d.size = len(raw)
			docs = append(docs, d)
		}
		if cont = p.Continuation; cont == "" {
			break
		}
	}
	// Group by transaction.
	type group struct {
		count int
		vs    map[string]bool
	}
	groups := map[string]*group{}
	markers := map[string]string{} // delete id → victim id
	for _, d := range docs {
		g := groups[d.Txn]
		if g == nil {
			g = &group{vs: map[string]bool{}}
			groups[d.Txn] = g
		}
		g.count++
		g.vs[d.V] = true
		if d.Deletes != "" {
			markers[d.Txn] = d.Deletes
		}
	}
	deleted := map[string]bool{} // victims of present markers
	for id, victim := range markers {
		deleted[victim] = true
		if groups[victim] != nil {
			fail("delete %s is there, and %d items of its victim %s too", id, groups[victim].count, victim)
		}
	}
	next := map[string]*plLive{}
	for id, g := range groups {
		tx := known[id]
		if tx == nil {
			tx = run.txns[id]
		}
		switch {
		case tx == nil:
			fail("unknown transaction %s with %d items", id, g.count)
			continue
		case g.count != tx.n:
			fail("%s %s is partly there: %d of %d items", tx.kind, id, g.count, tx.n)
		case len(g.vs) != 1:
			fail("%s %s is at several versions at once: %v", tx.kind, id, g.vs)
		}
		if tx.kind == "delete" {
			continue
		}
		v := ""
		for x := range g.vs {
			v = x
		}
		// Its version: what it had or one of this cycle's rewrites, and
		// from the last rewrite acknowledged before the crash on.
		touches := run.touches[id]
		last := -1
		for i, tc := range touches {
			if acked[tc.id] {
				last = i
			}
		}
		at := slices.IndexFunc(touches, func(tc *plTxn) bool { return tc.id == v })
		prev := ""
		if l := live[id]; l != nil {
			prev = l.v
		}
		if ok := at >= last && (at >= 0 || v == prev); !ok {
			fail("%s %s is at version %q (rewrite %d of %d); rewrite %d was acknowledged before the crash", tx.kind, id, v, at, len(touches), last)
		}
		next[id] = &plLive{txn: tx, v: v}
	}
	// Durability: what was live and what was acknowledged is there, unless
	// a delete that is there removed it.
	for id, l := range live {
		if groups[id] == nil && !deleted[id] {
			fail("%s %s, there before the crash, is gone without its delete", l.txn.kind, id)
		}
	}
	for id := range acked {
		tx := run.txns[id]
		switch tx.kind {
		case "delete":
			if markers[id] == "" {
				fail("acknowledged delete %s of %s is not there", id, tx.victim.id)
			}
		case "touch":
			// checked with its victim
		default:
			if groups[id] == nil && !deleted[id] {
				fail("acknowledged %s %s is gone", tx.kind, id)
			}
		}
	}
	bad = append(bad, plCheckDerived(ctx, e, docs)...)
	return next, bad
}

// plCheckDerived checks the index, the change feed and the statistics
// against the items.
func plCheckDerived(ctx context.Context, e *Engine, docs []plDoc) []string {
	var bad []string
	ids := map[string]bool{}
	bytes, items := 0, map[string]int{}
	pkBytes := map[string]int{}
	for _, d := range docs {
		ids[d.ID] = true
		bytes += d.size
		items[d.PK]++
		pkBytes[d.PK] += d.size
	}
	// The range index on /n: every item has n >= 1.
	found := map[string]bool{}
	usedIndex := false
	q := Query{Text: "SELECT VALUE c.id FROM c WHERE c.n >= 1", EnableCrossPartition: true, MaxItems: 1000}
	for {
		p, err := e.QueryItems(ctx, "db", "k", Scope{}, q)
		if err != nil {
			return append(bad, fmt.Sprintf("index query: %v", err))
		}
		usedIndex = usedIndex || p.Metrics.IndexPath != ""
		for _, raw := range p.Items {
			var id string
			_ = json.Unmarshal(raw, &id)
			found[id] = true
		}
		if q.Continuation = p.Continuation; q.Continuation == "" {
			break
		}
	}
	if len(docs) > 0 && !usedIndex {
		bad = append(bad, "the range query on /n did not use the index")
	}
	if len(found) != len(ids) {
		bad = append(bad, fmt.Sprintf("the index finds %d items, the feed %d", len(found), len(ids)))
	}
	if n, err := changeCount(ctx, e, "db", "k"); err != nil || n != len(ids) {
		bad = append(bad, fmt.Sprintf("the change feed has %d items (%v), the feed %d", n, err, len(ids)))
	}
	reports, err := e.Partitions(ctx, "db", "k")
	if err != nil {
		return append(bad, fmt.Sprintf("partition report: %v", err))
	}
	var sumItems, sumBytes int64
	for _, r := range reports {
		sumItems += r.Items
		sumBytes += r.StorageBytes
		for _, lp := range r.TopKeysByStorage {
			var key []string
			_ = json.Unmarshal([]byte(lp.Key), &key)
			if len(key) != 1 || int(lp.Items) != items[key[0]] || int(lp.Bytes) != pkBytes[key[0]] {
				bad = append(bad, fmt.Sprintf("statistics of logical partition %s: %d items, %d bytes; the feed has %d, %d",
					lp.Key, lp.Items, lp.Bytes, items[strings.Trim(lp.Key, `["]`)], pkBytes[strings.Trim(lp.Key, `["]`)]))
			}
		}
	}
	if sumItems != int64(len(docs)) || sumBytes != int64(bytes) {
		bad = append(bad, fmt.Sprintf("statistics: %d items, %d bytes; the feed has %d, %d", sumItems, sumBytes, len(docs), bytes))
	}
	return bad
}

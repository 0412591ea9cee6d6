package engine

// A model-based (stateful property) test of item semantics, written by a bug
// hunt (which found the engine agreeing with it on ~480 seeds, ~210,000
// operations): a seeded random sequence of operations — creates, upserts,
// replaces, deletes and reads with If-Match, patches (conditional too),
// transactional batches and bulk, partition key deletes, clock moves and
// TTL purges, splits, separations, indexing policy changes, reopens, and
// queries and change feeds interrupted by them — runs against the engine
// and against an in-memory model, and every observable state is compared:
// point reads (bodies, _etag, _ts), statuses, queries, read feeds, change
// feeds, usage and engine.Check. MODEL_SEED, MODEL_SEEDS and MODEL_STEPS
// replay and lengthen it; MODEL_MIN=1 shrinks a failure to a minimal
// sequence (make model).
//
//	MODEL_SEED=123 MODEL_STEPS=400 go test -run TestModelRandom ./internal/engine/

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

const (
	mPKs = 4
	mIDs = 5
	// container b's default time to live
	mDefaultTTL = 20
)

var mColls = []string{"a", "b", "h"}

type mKey struct{ pk, id int }

type mItem struct {
	body map[string]any // client members
	etag string
	ts   int64
	seq  int // the model's write counter at the item's last write
}

// mState is the model of one container.
type mState map[mKey]*mItem

type mPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

type mop struct {
	kind    string // create upsert replace delete patch read batch pkdel pkfinish clock purge split reopen check
	coll    int
	pk, id  int
	body    map[string]any
	ifMatch int // 0 none, 1 current, 2 stale, 3 "*"
	patch   []mPatchOp
	cond    int // -1: none; else "from c where c.n > cond"
	batch   []mop
	adv     int
	pick    int
}

func (o mop) String() string {
	switch o.kind {
	case "batch", "bulk":
		var s []string
		for _, b := range o.batch {
			s = append(s, b.String())
		}
		return fmt.Sprintf("%s %s p%d [%s]", o.kind, mColls[o.coll], o.pk, strings.Join(s, "; "))
	case "clock":
		return fmt.Sprintf("clock +%ds", o.adv)
	case "split", "separate", "reindex":
		return fmt.Sprintf("%s %s pick %d", o.kind, mColls[o.coll], o.pick)
	case "midsplit":
		return fmt.Sprintf("midsplit %s pick %d after %d pages, reader %d", mColls[o.coll], o.pick, o.adv, o.id)
	case "pkdel":
		return fmt.Sprintf("pkdel %s p%d", mColls[o.coll], o.pk)
	case "fill":
		return fmt.Sprintf("fill %s p%d with %d items", mColls[o.coll], o.pk, o.adv)
	case "pkfinish", "purge", "reopen", "check":
		return o.kind
	}
	s := fmt.Sprintf("%s %s p%d/i%d", o.kind, mColls[o.coll], o.pk, o.id)
	if o.ifMatch != 0 {
		s += fmt.Sprintf(" ifMatch=%d", o.ifMatch)
	}
	if o.body != nil {
		b, _ := json.Marshal(o.body)
		s += " " + string(b)
	}
	if o.patch != nil {
		b, _ := json.Marshal(o.patch)
		s += " " + string(b)
		if o.cond >= 0 {
			s += fmt.Sprintf(" cond n>%d", o.cond)
		}
	}
	return s
}

func genBody(r *rand.Rand, coll, pk, id int) map[string]any {
	b := map[string]any{"id": fmt.Sprintf("i%d", id), "pk": fmt.Sprintf("p%d", pk)}
	addHPK(b, coll, pk)
	if r.IntN(8) != 0 {
		b["n"] = float64(r.IntN(10))
	} else {
		b["n"] = "s" + strconv.Itoa(r.IntN(3))
	}
	switch x := r.IntN(12); {
	case x < 8:
		b["email"] = fmt.Sprintf("e%d", r.IntN(4))
	case x == 8:
		b["email"] = nil
	case x == 9:
		b["email"] = float64(r.IntN(2))
	}
	if r.IntN(2) == 0 {
		arr := []any{}
		for range r.IntN(3) {
			arr = append(arr, float64(r.IntN(5)))
		}
		b["arr"] = arr
	}
	if r.IntN(2) == 0 {
		b["o"] = map[string]any{"x": float64(r.IntN(5))}
	}
	if coll == 1 && r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			b["ttl"] = float64(-1)
		} else {
			b["ttl"] = float64(2 + r.IntN(15))
		}
	}
	return b
}

func genPatch(r *rand.Rand, coll int) []mPatchOp {
	var ops []mPatchOp
	for range 1 + r.IntN(3) {
		switch r.IntN(12) {
		case 0:
			ops = append(ops, mPatchOp{Op: "set", Path: "/n", Value: float64(r.IntN(10))})
		case 1:
			ops = append(ops, mPatchOp{Op: "incr", Path: "/n", Value: float64(r.IntN(5) - 2)})
		case 2:
			ops = append(ops, mPatchOp{Op: "replace", Path: "/n", Value: float64(r.IntN(10))})
		case 3:
			ops = append(ops, mPatchOp{Op: "remove", Path: "/email"})
		case 4:
			if r.IntN(4) == 0 {
				ops = append(ops, mPatchOp{Op: "set", Path: "/email", Value: nil})
			} else {
				ops = append(ops, mPatchOp{Op: "set", Path: "/email", Value: fmt.Sprintf("e%d", r.IntN(4))})
			}
		case 5:
			ops = append(ops, mPatchOp{Op: "add", Path: "/arr/-", Value: float64(r.IntN(5))})
		case 6:
			ops = append(ops, mPatchOp{Op: "add", Path: "/arr/0", Value: float64(r.IntN(5))})
		case 7:
			ops = append(ops, mPatchOp{Op: "set", Path: "/o/x", Value: float64(r.IntN(5))})
		case 8:
			ops = append(ops, mPatchOp{Op: "remove", Path: "/o"})
		case 9:
			ops = append(ops, mPatchOp{Op: "add", Path: "/o", Value: map[string]any{"x": float64(r.IntN(5))}})
		case 10:
			ops = append(ops, mPatchOp{Op: "move", From: "/n", Path: "/m"})
		case 11:
			if coll == 1 {
				ops = append(ops, mPatchOp{Op: "set", Path: "/ttl", Value: float64(2 + r.IntN(10))})
			} else {
				ops = append(ops, mPatchOp{Op: "incr", Path: "/o/x", Value: float64(1)})
			}
		}
	}
	return ops
}

func genItemOp(r *rand.Rand, coll, pk int, inBatch bool) mop {
	o := mop{coll: coll, pk: pk, id: r.IntN(mIDs), cond: -1}
	kinds := []string{"create", "create", "upsert", "upsert", "upsert", "replace", "replace", "delete", "patch", "patch", "patch", "read"}
	if inBatch && r.IntN(2) == 0 {
		kinds = []string{"upsert", "upsert", "patch", "read", "replace"}
	}
	o.kind = kinds[r.IntN(len(kinds))]
	switch o.kind {
	case "create", "upsert", "replace":
		o.body = genBody(r, coll, pk, o.id)
	case "patch":
		o.patch = genPatch(r, coll)
		if r.IntN(4) == 0 {
			o.cond = r.IntN(8)
		}
	}
	if o.kind != "create" && o.kind != "read" && r.IntN(4) == 0 {
		o.ifMatch = 1 + r.IntN(3)
	}
	return o
}

func genOps(r *rand.Rand, n int) []mop {
	var ops []mop
	for range n {
		coll := r.IntN(3)
		pk := r.IntN(mPKs)
		x := r.IntN(100)
		switch {
		case x < 70:
			ops = append(ops, genItemOp(r, coll, pk, false))
		case x < 73:
			b := mop{kind: "bulk", coll: coll}
			for range 1 + r.IntN(6) {
				b.batch = append(b.batch, genItemOp(r, coll, r.IntN(mPKs), true))
			}
			ops = append(ops, b)
		case x < 80:
			b := mop{kind: "batch", coll: coll, pk: pk}
			for range 1 + r.IntN(5) {
				b.batch = append(b.batch, genItemOp(r, coll, pk, true))
			}
			ops = append(ops, b)
		case x < 81:
			ops = append(ops, mop{kind: "pkdel", coll: coll, pk: pk})
		case x < 82:
			ops = append(ops, mop{kind: "fill", coll: coll, pk: pk, adv: 101 + r.IntN(10)})
		case x < 85:
			ops = append(ops, mop{kind: "pkfinish"})
		case x < 91:
			ops = append(ops, mop{kind: "clock", adv: 1 + r.IntN(6)})
		case x < 93:
			ops = append(ops, mop{kind: "purge"})
		case x < 94:
			ops = append(ops, mop{kind: "split", coll: coll, pick: r.IntN(16)})
		case x < 95:
			ops = append(ops, mop{kind: "separate", coll: coll, pick: r.IntN(16)})
		case x < 95 && r.IntN(2) == 0:
			ops = append(ops, mop{kind: "reindex", coll: coll, pick: r.IntN(4)})
		case x < 96:
			ops = append(ops, mop{kind: "midsplit", coll: coll, pick: r.IntN(16), adv: 1 + r.IntN(4), id: r.IntN(3)})
		case x < 97:
			ops = append(ops, mop{kind: "reopen"})
		default:
			ops = append(ops, mop{kind: "check"})
		}
	}
	return ops
}

// ---- model semantics ----

func cloneAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneAny(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = cloneAny(e)
		}
		return a
	}
	return v
}

func cloneBody(b map[string]any) map[string]any { return cloneAny(b).(map[string]any) }

// expiredAt reports whether item it of coll has expired at now.
func expiredAt(coll int, it *mItem, now int64) bool {
	if coll != 1 {
		return false
	}
	ttl := int64(mDefaultTTL)
	if v, ok := it.body["ttl"].(float64); ok {
		ttl = int64(v)
	}
	if ttl < 0 {
		return false
	}
	if mMutate {
		return now > it.ts+ttl // a deliberately wrong model, to see the test fail
	}
	return now >= it.ts+ttl
}

var mMutate = os.Getenv("MODEL_MUTATE") != ""

func emailOf(b map[string]any) string {
	v, ok := b["email"]
	if !ok || v == nil {
		return "\x00null"
	}
	if s, ok := v.(string); ok {
		return "s:" + s
	}
	j, _ := json.Marshal(v)
	return "j:" + string(j)
}

// applyPatchModel applies ops to a copy of body; ok false: 400.
func applyPatchModel(body map[string]any, ops []mPatchOp) (map[string]any, bool) {
	b := cloneBody(body)
	for _, op := range ops {
		segs := strings.Split(op.Path[1:], "/")
		switch op.Op {
		case "move":
			v, ok := b["n"]
			if !ok {
				return nil, false
			}
			delete(b, "n")
			b["m"] = v
			continue
		}
		if len(segs) == 1 {
			k := segs[0]
			_, has := b[k]
			switch op.Op {
			case "set", "add":
				b[k] = cloneAny(op.Value)
			case "replace":
				if !has {
					return nil, false
				}
				b[k] = cloneAny(op.Value)
			case "remove":
				if !has {
					return nil, false
				}
				delete(b, k)
			case "incr":
				if !has {
					b[k] = op.Value
				} else if f, ok := b[k].(float64); ok {
					b[k] = f + op.Value.(float64)
				} else {
					return nil, false
				}
			}
			continue
		}
		parent, ok := b[segs[0]]
		if !ok {
			return nil, false
		}
		switch p := parent.(type) {
		case []any:
			switch {
			case op.Op == "add" && segs[1] == "-":
				b[segs[0]] = append(p, cloneAny(op.Value))
			case op.Op == "add" && segs[1] == "0":
				b[segs[0]] = append([]any{cloneAny(op.Value)}, p...)
			default:
				panic("unmodelled array op " + op.Op + " " + op.Path)
			}
		case map[string]any:
			k := segs[1]
			_, has := p[k]
			switch op.Op {
			case "set", "add":
				p[k] = cloneAny(op.Value)
			case "incr":
				if !has {
					p[k] = op.Value
				} else if f, ok := p[k].(float64); ok {
					p[k] = f + op.Value.(float64)
				} else {
					return nil, false
				}
			default:
				panic("unmodelled object op " + op.Op)
			}
		default:
			return nil, false
		}
	}
	return b, true
}

// ---- harness ----

type mRun struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	st     *store.Store
	e      *Engine
	clock  *fakeClock
	models [3]mState
	cfg    Config
	pend   bool // pk deletes may be pending
	seq    int
	// an incremental change feed per container: its position, and the
	// write counter when it was read
	feedPos [3]string
	feedSeq [3]int
	feedOn  [3]bool
}

func newMRun(t *testing.T, cfg Config) (*mRun, error) {
	dir, err := os.MkdirTemp("", "model")
	if err != nil {
		return nil, err
	}
	m := &mRun{t: t, ctx: context.Background(), dir: dir, clock: &fakeClock{t: time.Unix(1_700_000_000, 0)}, cfg: cfg}
	m.models = [3]mState{{}, {}, {}}
	if err := m.open(); err != nil {
		return nil, err
	}
	if _, err := m.e.CreateDatabase("db", Throughput{}); err != nil {
		return nil, err
	}
	defs := []string{
		`{"id":"a","partitionKey":{"paths":["/pk"]}}`,
		`{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`,
		fmt.Sprintf(`{"id":"b","partitionKey":{"paths":["/pk"]},"defaultTtl":%d,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}}`, mDefaultTTL),
	}
	for i, d := range defs {
		if _, err := m.e.CreateContainer("db", []byte(d), Throughput{Manual: []int{400, 24000, 12000}[i]}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *mRun) open() error {
	st, err := store.Open(store.Options{Dir: m.dir, Sync: true})
	if err != nil {
		return err
	}
	m.st = st
	e, err := openOn(m.t, m.ctx, st, m.cfg, m.clock.now, nil)
	if err != nil {
		return err
	}
	m.e = e
	return nil
}

func (m *mRun) close() {
	if m.st != nil {
		m.st.Close()
	}
	os.RemoveAll(m.dir)
}

func (m *mRun) now() int64 { return m.clock.now().Unix() }

// live returns the model's live item at k of coll (nil: none).
func (m *mRun) live(coll int, k mKey) *mItem {
	it := m.models[coll][k]
	if it == nil || expiredAt(coll, it, m.now()) {
		return nil
	}
	return it
}

func pkFor(coll, pk int) document.PartitionKey {
	if coll == 2 {
		return document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("t%d", pk%2)}, {Kind: document.Number, Number: float64(pk)}}
	}
	return pkN(pk)
}

func addHPK(b map[string]any, coll, pk int) {
	if coll == 2 {
		b["t"] = fmt.Sprintf("t%d", pk%2)
		b["u"] = float64(pk)
	}
}

func statusOf(err error) int {
	if err == nil {
		return 0
	}
	return code(err)
}

// expectWrite computes the model's outcome of item op o on state s (a map
// of live items of one container): the status and, for a success, the new
// body (nil for a delete). ifMatch is the etag the op sends.
func (m *mRun) expect(coll int, s mState, o mop, ifMatch string) (int, map[string]any) {
	k := mKey{o.pk, o.id}
	cur := s[k]
	if cur != nil && expiredAt(coll, cur, m.now()) {
		cur = nil
	}
	mismatch := func() bool { return ifMatch != "" && ifMatch != "*" && cur != nil && ifMatch != cur.etag }
	uniqueClash := func(nb map[string]any) bool {
		if coll != 1 {
			return false
		}
		em := emailOf(nb)
		for k2, it := range s {
			if k2.pk == o.pk && k2 != k && !expiredAt(coll, it, m.now()) && emailOf(it.body) == em {
				return true
			}
		}
		return false
	}
	switch o.kind {
	case "read":
		if cur == nil {
			return http.StatusNotFound, nil
		}
		return http.StatusOK, cur.body
	case "create":
		if cur != nil {
			return http.StatusConflict, nil
		}
		if uniqueClash(o.body) {
			return http.StatusConflict, nil
		}
		return http.StatusCreated, o.body
	case "upsert":
		if mismatch() {
			return http.StatusPreconditionFailed, nil
		}
		if uniqueClash(o.body) {
			return http.StatusConflict, nil
		}
		if cur == nil {
			return http.StatusCreated, o.body
		}
		return http.StatusOK, o.body
	case "replace":
		if cur == nil {
			return http.StatusNotFound, nil
		}
		if mismatch() {
			return http.StatusPreconditionFailed, nil
		}
		if uniqueClash(o.body) {
			return http.StatusConflict, nil
		}
		return http.StatusOK, o.body
	case "delete":
		if cur == nil {
			return http.StatusNotFound, nil
		}
		if mismatch() {
			return http.StatusPreconditionFailed, nil
		}
		return http.StatusNoContent, nil
	case "patch":
		if cur == nil {
			return http.StatusNotFound, nil
		}
		if mismatch() {
			return http.StatusPreconditionFailed, nil
		}
		if o.cond >= 0 {
			n, ok := cur.body["n"].(float64)
			if !ok || !(n > float64(o.cond)) {
				return http.StatusPreconditionFailed, nil
			}
		}
		nb, ok := applyPatchModel(cur.body, o.patch)
		if !ok {
			return http.StatusBadRequest, nil
		}
		if uniqueClash(nb) {
			return http.StatusConflict, nil
		}
		return http.StatusOK, nb
	}
	panic(o.kind)
}

const staleETag = `"not-an-etag-of-this-store"`

func (m *mRun) ifMatchFor(coll int, s mState, o mop) string {
	switch o.ifMatch {
	case 1:
		if it := s[mKey{o.pk, o.id}]; it != nil {
			return it.etag
		}
		return staleETag
	case 2:
		return staleETag
	case 3:
		return "*"
	}
	return ""
}

func patchBody(o mop) []byte {
	req := map[string]any{"operations": o.patch}
	if o.cond >= 0 {
		req["condition"] = fmt.Sprintf("from c where c.n > %d", o.cond)
	}
	b, _ := json.Marshal(req)
	return b
}

var sysProps = []string{"_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"}

// decodeItem returns the client members of a stored item and its etag and _ts.
func decodeItem(b []byte) (map[string]any, string, int64, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", 0, err
	}
	etag, _ := m["_etag"].(string)
	ts, _ := m["_ts"].(float64)
	for _, p := range sysProps {
		delete(m, p)
	}
	return m, etag, int64(ts), nil
}

func bodyStr(b map[string]any) string {
	j, _ := json.Marshal(b)
	return string(j)
}

// step runs o against engine and model; it returns a discrepancy.
func (m *mRun) step(o mop) error {
	ctx := m.ctx
	switch o.kind {
	case "create", "upsert", "replace", "delete", "patch", "read":
		return m.itemOp(o)
	case "batch":
		return m.batchOp(o)
	case "bulk":
		return m.bulkOp(o)
	case "pkdel":
		res, err := m.e.DeletePartition(ctx, "db", mColls[o.coll], pkFor(o.coll, o.pk))
		if err != nil {
			return fmt.Errorf("pkdel: %v", err)
		}
		if !res.Done {
			m.pend = true
		}
		for k := range m.models[o.coll] {
			if k.pk == o.pk {
				delete(m.models[o.coll], k)
			}
		}
		return m.checkPK(o.coll, o.pk)
	case "fill":
		for j := range o.adv {
			b := map[string]any{"id": fmt.Sprintf("i%d", 100+j), "pk": fmt.Sprintf("p%d", o.pk), "n": float64(j % 10), "email": fmt.Sprintf("f%d", j)}
			if j < 4 {
				b["email"] = fmt.Sprintf("e%d", j)
			}
			addHPK(b, o.coll, o.pk)
			if err := m.itemOp(mop{kind: "upsert", coll: o.coll, pk: o.pk, id: 100 + j, body: b, cond: -1}); err != nil {
				return err
			}
		}
		return nil
	case "pkfinish":
		for _, d := range m.e.pkdel.all() {
			if err := m.e.finishPKDelete(ctx, d); err != nil {
				return fmt.Errorf("finishPKDelete: %v", err)
			}
		}
		m.pend = false
		return nil
	case "clock":
		m.clock.advance(time.Duration(o.adv) * time.Second)
		return nil
	case "purge":
		m.e.purgeExpired(ctx, purgeCursors{})
		return nil
	case "split":
		id, err := m.pickRange(o)
		if err != nil {
			return err
		}
		if _, err := m.e.SplitRange(ctx, "db", mColls[o.coll], id); err != nil && code(err) != http.StatusBadRequest {
			return fmt.Errorf("split %s: %v", id, err)
		}
		return nil
	case "separate":
		id, err := m.pickRange(o)
		if err != nil {
			return err
		}
		if err := m.e.SeparateRange(ctx, "db", mColls[o.coll], id); err != nil {
			return fmt.Errorf("separate %s: %v", id, err)
		}
		return m.fullCheck()
	case "midsplit":
		return m.midSplit(o)
	case "reindex":
		policies := []string{
			``,
			`,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/n/?"}],"compositeIndexes":[[{"path":"/n"},{"path":"/email","order":"descending"}]]}`,
			`,"indexingPolicy":{"includedPaths":[{"path":"/email/?"},{"path":"/o/*"}],"excludedPaths":[{"path":"/*"}]}`,
			`,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/arr/*"},{"path":"/email/?"}],"compositeIndexes":[[{"path":"/o/x"},{"path":"/n"}],[{"path":"/email"},{"path":"/arr","order":"descending"}]]}`,
		}
		defs := []string{
			`{"id":"a","partitionKey":{"paths":["/pk"]}%s}`,
			`{"id":"b","partitionKey":{"paths":["/pk"]},"defaultTtl":20,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}%s}`,
			`{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}%s}`,
		}
		def := fmt.Sprintf(defs[o.coll], policies[o.pick])
		if _, err := m.e.ReplaceContainer("db", mColls[o.coll], []byte(def), ""); err != nil {
			return fmt.Errorf("%s: %v", o, err)
		}
		return m.fullCheck()
	case "reopen":
		if err := m.st.Close(); err != nil {
			return fmt.Errorf("close: %v", err)
		}
		if err := m.open(); err != nil {
			return fmt.Errorf("reopen: %v", err)
		}
		if err := m.check(); err != nil {
			return err
		}
		return m.fullCheck()
	case "check":
		return m.fullCheck()
	}
	return fmt.Errorf("unknown op %s", o.kind)
}

func (m *mRun) check() error {
	r, err := m.e.Check(m.ctx)
	if err != nil {
		return fmt.Errorf("Check: %v", err)
	}
	if !r.OK() {
		return fmt.Errorf("Check found problems:\n%s", r)
	}
	return nil
}

func (m *mRun) itemOp(o mop) error {
	ctx := m.ctx
	coll := mColls[o.coll]
	s := m.models[o.coll]
	k := mKey{o.pk, o.id}
	ifMatch := m.ifMatchFor(o.coll, s, o)
	want, wantBody := m.expect(o.coll, s, o, ifMatch)
	ref := ItemRef{DB: "db", Container: coll, ID: fmt.Sprintf("i%d", o.id)}
	var res Result
	var err error
	switch o.kind {
	case "create", "upsert", "replace":
		kind := map[string]WriteKind{"create": Create, "upsert": Upsert, "replace": Replace}[o.kind]
		b, _ := json.Marshal(o.body)
		res, err = m.e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: kind, ID: ref.ID, PK: pkFor(o.coll, o.pk), Body: b, IfMatch: ifMatch})
	case "delete":
		res, err = m.e.DeleteItem(ctx, ref, pkFor(o.coll, o.pk), ifMatch, TriggerSet{})
	case "patch":
		res, err = m.e.PatchItem(ctx, ref, pkFor(o.coll, o.pk), patchBody(o), ifMatch)
	case "read":
		res, err = m.e.ReadItem(ctx, ref, pkFor(o.coll, o.pk), "")
	}
	got := http.StatusOK
	if err != nil {
		got = statusOf(err)
	} else {
		switch o.kind {
		case "delete":
			got = http.StatusNoContent
		case "create":
			got = http.StatusCreated
		case "upsert":
			if res.Created {
				got = http.StatusCreated
			}
		}
	}
	mStats[fmt.Sprintf("%s %s %d", mColls[o.coll], o.kind, got)]++
	if got != want {
		return fmt.Errorf("%s: status %d (%v), model says %d", o, got, err, want)
	}
	if err == nil {
		if err := m.applyResult(o.coll, s, o, res.Body, res.ETag, wantBody); err != nil {
			return err
		}
	}
	return m.checkPoint(o.coll, k)
}

// applyResult checks a successful op's result and applies it to s.
func (m *mRun) applyResult(coll int, s mState, o mop, body []byte, etag string, wantBody map[string]any) error {
	k := mKey{o.pk, o.id}
	prev := s[k]
	switch o.kind {
	case "read":
		return nil
	case "delete":
		delete(s, k)
		return nil
	}
	if body != nil {
		gb, getag, gts, err := decodeItem(body)
		if err != nil {
			return fmt.Errorf("%s: result body: %v", o, err)
		}
		if !reflect.DeepEqual(gb, wantBody) {
			return fmt.Errorf("%s: result body %s, model %s", o, bodyStr(gb), bodyStr(wantBody))
		}
		if getag != etag {
			return fmt.Errorf("%s: result _etag %s, header etag %s", o, getag, etag)
		}
		if gts != m.now() {
			return fmt.Errorf("%s: result _ts %d, clock %d", o, gts, m.now())
		}
	}
	if prev != nil && prev.etag == etag {
		return fmt.Errorf("%s: write kept the etag %s", o, etag)
	}
	m.seq++
	s[k] = &mItem{body: cloneBody(wantBody), etag: etag, ts: m.now(), seq: m.seq}
	return nil
}

// checkPoint compares a point read of k with the model.
func (m *mRun) checkPoint(coll int, k mKey) error {
	res, err := m.e.ReadItem(m.ctx, ItemRef{DB: "db", Container: mColls[coll], ID: fmt.Sprintf("i%d", k.id)}, pkFor(coll, k.pk), "")
	it := m.live(coll, k)
	if it == nil {
		if code(err) != http.StatusNotFound {
			return fmt.Errorf("read %s p%d/i%d: %v (body %s), model: absent", mColls[coll], k.pk, k.id, err, res.Body)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s p%d/i%d: %v, model %s", mColls[coll], k.pk, k.id, err, bodyStr(it.body))
	}
	if err := m.compareDoc(coll, k, res.Body, it, "read"); err != nil {
		return err
	}
	ref := ItemRef{DB: "db", Container: mColls[coll], ID: fmt.Sprintf("i%d", k.id)}
	res, err = m.e.ReadItem(m.ctx, ref, pkFor(coll, k.pk), it.etag)
	if err != nil || res.Body != nil || res.ETag != it.etag {
		return fmt.Errorf("read %s p%d/i%d If-None-Match current: %v, body %s, etag %s", mColls[coll], k.pk, k.id, err, res.Body, res.ETag)
	}
	res, err = m.e.ReadItem(m.ctx, ref, pkFor(coll, k.pk), staleETag)
	if err != nil || res.Body == nil {
		return fmt.Errorf("read %s p%d/i%d If-None-Match stale: %v, body %s", mColls[coll], k.pk, k.id, err, res.Body)
	}
	return nil
}

func (m *mRun) compareDoc(coll int, k mKey, doc []byte, it *mItem, what string) error {
	gb, etag, ts, err := decodeItem(doc)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(gb, it.body) {
		return fmt.Errorf("%s %s p%d/i%d: body %s, model %s", what, mColls[coll], k.pk, k.id, bodyStr(gb), bodyStr(it.body))
	}
	if etag != it.etag {
		return fmt.Errorf("%s %s p%d/i%d: _etag %s, model %s", what, mColls[coll], k.pk, k.id, etag, it.etag)
	}
	if ts != it.ts {
		return fmt.Errorf("%s %s p%d/i%d: _ts %d, model %d", what, mColls[coll], k.pk, k.id, ts, it.ts)
	}
	return nil
}

func (m *mRun) checkPK(coll, pk int) error {
	for id := range mIDs {
		if err := m.checkPoint(coll, mKey{pk, id}); err != nil {
			return err
		}
	}
	return nil
}

func (m *mRun) batchOp(o mop) error {
	coll := mColls[o.coll]
	s := m.models[o.coll]
	// The model applies the ops to a copy.
	cp := mState{}
	for k, v := range s {
		cp[k] = v
	}
	var ops []BatchOp
	wants := make([]int, len(o.batch))
	bodies := make([]map[string]any, len(o.batch))
	fail := -1
	for i, b := range o.batch {
		ifMatch := m.ifMatchFor(o.coll, s, b) // etags as of before the batch
		op := BatchOp{Type: b.kind, ID: fmt.Sprintf("i%d", b.id), IfMatch: ifMatch}
		switch b.kind {
		case "create", "upsert", "replace":
			op.Body, _ = json.Marshal(b.body)
		case "patch":
			op.Body = patchBody(b)
		}
		ops = append(ops, op)
		if fail >= 0 {
			continue
		}
		wants[i], bodies[i] = m.expect(o.coll, cp, b, ifMatch)
		if wants[i] >= 300 {
			fail = i
			continue
		}
		k := mKey{b.pk, b.id}
		switch b.kind {
		case "delete":
			delete(cp, k)
		case "read":
		default:
			cp[k] = &mItem{body: bodies[i], etag: "pending", ts: m.now()}
		}
	}
	resp, err := m.e.ExecuteBatch(m.ctx, "db", coll, pkFor(o.coll, o.pk), ops)
	if err != nil {
		return fmt.Errorf("%s: %v", o, err)
	}
	mStats[fmt.Sprintf("batch fail=%v", fail >= 0)]++
	if fail >= 0 {
		mStats[fmt.Sprintf("batch fail %s %d", o.batch[fail].kind, wants[fail])]++
	}
	if resp.OK != (fail < 0) {
		return fmt.Errorf("%s: OK %v, model fails at %d (%v)", o, resp.OK, fail, resultCodes(resp))
	}
	if fail >= 0 {
		for i, r := range resp.Results {
			w := http.StatusFailedDependency
			if i == fail {
				w = wants[fail]
			}
			if r.Status != w {
				return fmt.Errorf("%s: results %v, model fails at %d with %d", o, resultCodes(resp), fail, wants[fail])
			}
		}
	} else {
		for i, b := range o.batch {
			r := resp.Results[i]
			if r.Status != wants[i] {
				return fmt.Errorf("%s: results %v, model %v", o, resultCodes(resp), wants)
			}
			if err := m.applyResult(o.coll, s, b, r.Body, r.ETag, bodies[i]); err != nil {
				return err
			}
		}
	}
	for _, b := range o.batch {
		if err := m.checkPoint(o.coll, mKey{b.pk, b.id}); err != nil {
			return fmt.Errorf("after %s: %v", o, err)
		}
	}
	return nil
}

func resultCodes(r BatchResponse) []int {
	var c []int
	for _, x := range r.Results {
		c = append(c, x.Status)
	}
	return c
}

// ---- whole-container checks ----

func rowKey(doc []byte) (mKey, error) {
	var x struct{ ID, PK string }
	if err := json.Unmarshal(doc, &struct {
		ID *string `json:"id"`
		PK *string `json:"pk"`
	}{&x.ID, &x.PK}); err != nil {
		return mKey{}, err
	}
	var k mKey
	if _, err := fmt.Sscanf(x.ID, "i%d", &k.id); err != nil {
		return k, fmt.Errorf("id %q", x.ID)
	}
	if _, err := fmt.Sscanf(x.PK, "p%d", &k.pk); err != nil {
		return k, fmt.Errorf("pk %q", x.PK)
	}
	return k, nil
}

func (m *mRun) queryRows(coll int, scope Scope, text string, pageSize int) ([][]byte, error) {
	q := Query{Text: text, EnableCrossPartition: true, MaxItems: pageSize}
	var out [][]byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return nil, fmt.Errorf("query %q: too many pages", text)
		}
		p, err := m.e.QueryItems(m.ctx, "db", mColls[coll], scope, q)
		if err != nil {
			return nil, fmt.Errorf("query %q: %v", text, err)
		}
		out = append(out, p.Items...)
		if p.Continuation == "" {
			return out, nil
		}
		q.Continuation = p.Continuation
	}
}

// compareSet compares docs with the model's live items matching keep.
func (m *mRun) compareSet(coll int, what string, docs [][]byte, keep func(mKey, *mItem) bool) error {
	seen := map[mKey]bool{}
	for _, d := range docs {
		k, err := rowKey(d)
		if err != nil {
			return fmt.Errorf("%s: %v in %s", what, err, d)
		}
		if seen[k] {
			return fmt.Errorf("%s: p%d/i%d twice", what, k.pk, k.id)
		}
		seen[k] = true
		it := m.live(coll, k)
		if it == nil || !keep(k, it) {
			return fmt.Errorf("%s: returns p%d/i%d (%s), model: absent or filtered out", what, k.pk, k.id, d)
		}
		if err := m.compareDoc(coll, k, d, it, what); err != nil {
			return err
		}
	}
	for k := range m.models[coll] {
		if it := m.live(coll, k); it != nil && keep(k, it) && !seen[k] {
			return fmt.Errorf("%s: misses p%d/i%d %s", what, k.pk, k.id, bodyStr(it.body))
		}
	}
	return nil
}

func (m *mRun) fullCheck() error {
	all := func(mKey, *mItem) bool { return true }
	for coll := range mColls {
		name := mColls[coll]
		for _, ps := range []int{-1, 3} {
			docs, err := m.queryRows(coll, Scope{}, "SELECT * FROM c", ps)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: SELECT * (page %d)", name, ps), docs, all); err != nil {
				return err
			}
		}
		for pk := range mPKs {
			docs, err := m.queryRows(coll, Scope{PK: pkFor(coll, pk)}, "SELECT * FROM c", 2)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: SELECT * in p%d", name, pk), docs, func(k mKey, _ *mItem) bool { return k.pk == pk }); err != nil {
				return err
			}
		}
		if coll == 2 {
			for tv := range 2 {
				pre := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("t%d", tv)}}
				docs, err := m.queryRows(coll, Scope{PK: pre}, "SELECT * FROM c", 2)
				if err != nil {
					return err
				}
				if err := m.compareSet(coll, fmt.Sprintf("%s: SELECT * in prefix t%d", name, tv), docs, func(k mKey, _ *mItem) bool { return k.pk%2 == tv }); err != nil {
					return err
				}
				docs, err = m.queryRows(coll, Scope{}, fmt.Sprintf(`SELECT * FROM c WHERE c.t = "t%d"`, tv), 3)
				if err != nil {
					return err
				}
				if err := m.compareSet(coll, fmt.Sprintf("%s: WHERE c.t = t%d", name, tv), docs, func(k mKey, _ *mItem) bool { return k.pk%2 == tv }); err != nil {
					return err
				}
			}
		}
		// Index lookups.
		for v := range 5 {
			docs, err := m.queryRows(coll, Scope{}, fmt.Sprintf("SELECT * FROM c WHERE c.n = %d", v), -1)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: n = %d", name, v), docs, func(_ mKey, it *mItem) bool { return it.body["n"] == float64(v) }); err != nil {
				return err
			}
			docs, err = m.queryRows(coll, Scope{}, fmt.Sprintf("SELECT * FROM c WHERE c.n > %d", v), -1)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: n > %d", name, v), docs, func(_ mKey, it *mItem) bool {
				f, ok := it.body["n"].(float64)
				return ok && f > float64(v)
			}); err != nil {
				return err
			}
			docs, err = m.queryRows(coll, Scope{}, fmt.Sprintf(`SELECT * FROM c WHERE c.email = "e%d"`, v), -1)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: email = e%d", name, v), docs, func(_ mKey, it *mItem) bool { return it.body["email"] == fmt.Sprintf("e%d", v) }); err != nil {
				return err
			}
			docs, err = m.queryRows(coll, Scope{}, fmt.Sprintf(`SELECT * FROM c WHERE c.o.x = %d`, v), -1)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: o.x = %d", name, v), docs, func(_ mKey, it *mItem) bool {
				o, ok := it.body["o"].(map[string]any)
				return ok && o["x"] == float64(v)
			}); err != nil {
				return err
			}
			docs, err = m.queryRows(coll, Scope{}, fmt.Sprintf(`SELECT * FROM c WHERE ARRAY_CONTAINS(c.arr, %d)`, v), -1)
			if err != nil {
				return err
			}
			if err := m.compareSet(coll, fmt.Sprintf("%s: ARRAY_CONTAINS(arr, %d)", name, v), docs, func(_ mKey, it *mItem) bool {
				a, ok := it.body["arr"].([]any)
				return ok && slices.Contains(a, any(float64(v)))
			}); err != nil {
				return err
			}
		}
		// Counts per logical partition and filtered.
		for pk := range mPKs {
			for _, f := range []struct {
				where string
				keep  func(*mItem) bool
			}{
				{"", func(*mItem) bool { return true }},
				{" WHERE c.n = 3", func(it *mItem) bool { return it.body["n"] == float64(3) }},
				{` WHERE c.email = "e1"`, func(it *mItem) bool { return it.body["email"] == "e1" }},
				{" WHERE IS_DEFINED(c.o)", func(it *mItem) bool { _, ok := it.body["o"]; return ok }},
			} {
				for _, scoped := range []bool{true, false} {
					scope := Scope{}
					where := f.where
					if scoped {
						scope.PK = pkFor(coll, pk)
					} else if where == "" {
						where = fmt.Sprintf(` WHERE c.pk = "p%d"`, pk)
					} else {
						where += fmt.Sprintf(` AND c.pk = "p%d"`, pk)
					}
					text := "SELECT VALUE COUNT(1) FROM c" + where
					rows, err := m.queryRows(coll, scope, text, -1)
					if err != nil {
						return err
					}
					n := 0
					for k, it := range m.models[coll] {
						if k.pk == pk && m.live(coll, k) != nil && f.keep(it) {
							n++
						}
					}
					if len(rows) != 1 || string(rows[0]) != strconv.Itoa(n) {
						return fmt.Errorf("%s: %s (scoped %v) = %q, model %d", name, text, scoped, rows, n)
					}
				}
			}
		}
		// Count.
		rows, err := m.queryRows(coll, Scope{}, "SELECT VALUE COUNT(1) FROM c", -1)
		if err != nil {
			return err
		}
		n := 0
		for k := range m.models[coll] {
			if m.live(coll, k) != nil {
				n++
			}
		}
		if len(rows) != 1 || string(rows[0]) != strconv.Itoa(n) {
			return fmt.Errorf("%s: COUNT(1) = %q, model %d", name, rows, n)
		}
		// ORDER BY n (numbers only).
		rows, err = m.queryRows(coll, Scope{}, "SELECT VALUE c.n FROM c WHERE IS_NUMBER(c.n) ORDER BY c.n", 4)
		if err != nil {
			return err
		}
		var want []string
		for k, it := range m.models[coll] {
			if m.live(coll, k) != nil {
				if f, ok := it.body["n"].(float64); ok {
					want = append(want, strconv.FormatFloat(f, 'f', -1, 64))
				}
			}
		}
		sort.Slice(want, func(i, j int) bool { a, _ := strconv.Atoi(want[i]); b, _ := strconv.Atoi(want[j]); return a < b })
		var got []string
		for _, r := range rows {
			got = append(got, string(r))
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s: ORDER BY n = %v, model %v", name, got, want)
		}
		readAll := func(scope Scope, ps int) ([][]byte, error) {
			var out [][]byte
			cont := ""
			for pages := 0; pages < 1000; pages++ {
				p, err := m.e.ReadFeed(m.ctx, "db", name, scope, ps, cont)
				if err != nil {
					return nil, fmt.Errorf("read feed %+v: %v", scope, err)
				}
				out = append(out, p.Items...)
				if cont = p.Continuation; cont == "" {
					break
				}
			}
			return out, nil
		}
		if err := m.compareScopes(coll, "read feed", readAll); err != nil {
			return err
		}
		if err := m.checkFeed(coll); err != nil {
			return err
		}
		if err := m.checkUsage(coll); err != nil {
			return err
		}
	}
	return m.check()
}

// checkFeed reads the change feed from the beginning, whole and per range.
func (m *mRun) checkFeed(coll int) error {
	name := mColls[coll]
	read := func(scope Scope, pageSize int) ([][]byte, error) {
		req := ChangeFeed{Scope: scope, MaxItems: pageSize}
		var out [][]byte
		var lsn float64 = -1
		for pages := 0; ; pages++ {
			if pages > 1000 {
				return nil, fmt.Errorf("change feed: too many pages")
			}
			p, err := m.e.ReadChanges(m.ctx, "db", name, req)
			if err != nil {
				return nil, fmt.Errorf("change feed %+v: %v", scope, err)
			}
			for _, d := range p.Items {
				var x struct {
					LSN float64 `json:"_lsn"`
				}
				_ = json.Unmarshal(d, &x)
				if scope.RangeID != "" {
					if x.LSN <= lsn {
						return nil, fmt.Errorf("change feed of range %s: _lsn %v after %v", scope.RangeID, x.LSN, lsn)
					}
					lsn = x.LSN
				}
			}
			out = append(out, p.Items...)
			req.After, req.HasAfter = p.Position, true
			if len(p.Items) == 0 {
				return out, nil
			}
		}
	}
	// The incremental feed: what was written since its last read.
	if m.feedOn[coll] {
		req := ChangeFeed{MaxItems: 3, After: m.feedPos[coll], HasAfter: true}
		var out [][]byte
		for pages := 0; ; pages++ {
			p, err := m.e.ReadChanges(m.ctx, "db", name, req)
			if err != nil {
				return fmt.Errorf("incremental change feed: %v", err)
			}
			out = append(out, p.Items...)
			req.After = p.Position
			if len(p.Items) == 0 || pages > 500 {
				break
			}
		}
		since := m.feedSeq[coll]
		if err := m.compareSet(coll, fmt.Sprintf("%s: incremental change feed from %q", name, m.feedPos[coll]), out, func(_ mKey, it *mItem) bool { return it.seq > since }); err != nil {
			return err
		}
		m.feedPos[coll], m.feedSeq[coll] = req.After, m.seq
	} else {
		p, err := m.e.ReadChanges(m.ctx, "db", name, ChangeFeed{Start: ChangeStart{Now: true}})
		if err != nil {
			return err
		}
		m.feedPos[coll], m.feedSeq[coll], m.feedOn[coll] = p.Position, m.seq, true
	}
	// From a start time.
	var tss []int64
	for k, it := range m.models[coll] {
		if m.live(coll, k) != nil {
			tss = append(tss, it.ts)
		}
	}
	if len(tss) > 0 {
		slices.Sort(tss)
		since := tss[len(tss)/2]
		req := ChangeFeed{MaxItems: 2, Start: ChangeStart{Since: time.Unix(since, 0)}}
		var out [][]byte
		for pages := 0; ; pages++ {
			p, err := m.e.ReadChanges(m.ctx, "db", name, req)
			if err != nil {
				return fmt.Errorf("change feed since: %v", err)
			}
			out = append(out, p.Items...)
			req.After, req.HasAfter = p.Position, true
			if len(p.Items) == 0 || pages > 500 {
				break
			}
		}
		if err := m.compareSet(coll, fmt.Sprintf("%s: change feed since %d", name, since), out, func(_ mKey, it *mItem) bool { return it.ts >= since }); err != nil {
			return err
		}
	}
	return m.compareScopes(coll, "change feed", read)
}

// checkUsage compares the statistics' item count with the model, when no
// hidden item (expired, or of a pending partition key delete) may count.
func (m *mRun) checkUsage(coll int) error {
	if m.pend && len(m.e.pkdel.all()) > 0 {
		return nil
	}
	n := 0
	for k, it := range m.models[coll] {
		if expiredAt(coll, it, m.now()) {
			return nil // expired, maybe not purged
		}
		_ = k
		n++
	}
	u, err := m.e.ContainerUsage(m.ctx, "db", mColls[coll])
	if err != nil {
		return err
	}
	if u.Items != int64(n) {
		return fmt.Errorf("%s: ContainerUsage.Items %d, model %d", mColls[coll], u.Items, n)
	}
	rep, err := m.e.Partitions(m.ctx, "db", mColls[coll])
	if err != nil {
		return err
	}
	var sum int64
	for _, p := range rep {
		sum += p.Items
	}
	if sum != int64(n) {
		return fmt.Errorf("%s: Partitions items %d, model %d", mColls[coll], sum, n)
	}
	return nil
}

// runOps runs ops on a fresh engine and returns the index of the failing op
// and the discrepancy (-1, nil: clean).
func runOps(t *testing.T, ops []mop, final bool) (int, error) {
	m, err := newMRun(t, Config{GatewayQueryFull: true, PKDeleteSyncItems: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	for i, o := range ops {
		if err := m.step(o); err != nil {
			return i, err
		}
	}
	if final {
		if err := m.fullCheck(); err != nil {
			return len(ops), err
		}
	}
	return -1, nil
}

// minimize shrinks ops while runOps still fails (with any discrepancy).
func minimize(t *testing.T, ops []mop) []mop {
	fails := func(o []mop) bool { i, _ := runOps(t, o, true); return i >= 0 }
	for chunk := len(ops) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(ops); {
			cand := append(slices.Clone(ops[:i]), ops[i+chunk:]...)
			if fails(cand) {
				ops = cand
			} else {
				i += chunk
			}
		}
	}
	// Shrink batches.
	for i := range ops {
		if ops[i].kind != "batch" {
			continue
		}
		for j := 0; j < len(ops[i].batch) && len(ops[i].batch) > 1; {
			cand := slices.Clone(ops)
			cand[i].batch = append(slices.Clone(ops[i].batch[:j]), ops[i].batch[j+1:]...)
			if fails(cand) {
				ops = cand
			} else {
				j++
			}
		}
	}
	return ops
}

var mStats = map[string]int{}

func mEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func TestModelRandom(t *testing.T) {
	seed := uint64(mEnvInt("MODEL_SEED", 1))
	steps := mEnvInt("MODEL_STEPS", 150)
	seeds := mEnvInt("MODEL_SEEDS", 1)
	for s := seed; s < seed+uint64(seeds); s++ {
		ops := genOps(rand.New(rand.NewPCG(s, 0x5eed)), steps)
		i, err := runOps(t, ops, true)
		if err == nil {
			if testing.Verbose() {
				t.Logf("seed %d: %d steps clean", s, steps)
			}
			continue
		}
		t.Logf("seed %d (MODEL_SEED=%d MODEL_STEPS=%d): step %d: %v", s, s, steps, i, err)
		if os.Getenv("MODEL_MIN") != "" {
			min := minimize(t, ops[:min(i+1, len(ops))])
			_, merr := runOps(t, min, true)
			var b strings.Builder
			for _, o := range min {
				fmt.Fprintf(&b, "  %s\n", o)
			}
			t.Logf("minimized to %d ops:\n%s=> %v", len(min), b.String(), merr)
		}
		t.Fatalf("seed %d failed", s)
	}
	if testing.Verbose() {
		var ks []string
		for k := range mStats {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			t.Logf("%-30s %d", k, mStats[k])
		}
	}
}

// midSplit reads a query or the change feed partly, splits (and sometimes
// separates) a range, and reads on: the rows must be the model's, once.
func (m *mRun) midSplit(o mop) error {
	name := mColls[o.coll]
	all := func(mKey, *mItem) bool { return true }
	split := func() error {
		switch o.pick % 5 {
		case 1:
			if err := m.st.Close(); err != nil {
				return err
			}
			return m.open()
		case 3:
			for _, d := range m.e.pkdel.all() {
				if err := m.e.finishPKDelete(m.ctx, d); err != nil {
					return err
				}
			}
			m.e.purgeExpired(m.ctx, purgeCursors{})
			return nil
		}
		c, err := m.e.container("db", name)
		if err != nil {
			return err
		}
		rs := c.Map().Ranges()
		r := rs[o.pick%len(rs)]
		kids, err := m.e.SplitRange(m.ctx, "db", name, r.ID)
		if err != nil && code(err) != http.StatusBadRequest {
			return fmt.Errorf("split %s: %v", r.ID, err)
		}
		if err == nil && o.pick%2 == 0 {
			if err := m.e.SeparateRange(m.ctx, "db", name, kids[len(kids)-1].ID); err != nil {
				return fmt.Errorf("separate: %v", err)
			}
		}
		return nil
	}
	switch o.id {
	case 0, 1:
		text := "SELECT * FROM c"
		if o.id == 1 {
			text = "SELECT * FROM c ORDER BY c.n"
		}
		q := Query{Text: text, EnableCrossPartition: true, MaxItems: 2}
		var out [][]byte
		for pages := 0; ; pages++ {
			if pages == o.adv {
				if err := split(); err != nil {
					return err
				}
			}
			p, err := m.e.QueryItems(m.ctx, "db", name, Scope{}, q)
			if err != nil {
				return fmt.Errorf("%s: %q page %d: %v", o, text, pages, err)
			}
			out = append(out, p.Items...)
			if p.Continuation == "" || pages > 500 {
				break
			}
			q.Continuation = p.Continuation
		}
		return m.compareSet(o.coll, fmt.Sprintf("%s: %q", o, text), out, all)
	default:
		req := ChangeFeed{MaxItems: 2}
		var out [][]byte
		for pages := 0; ; pages++ {
			if pages == o.adv {
				if err := split(); err != nil {
					return err
				}
			}
			p, err := m.e.ReadChanges(m.ctx, "db", name, req)
			if err != nil {
				return fmt.Errorf("%s: change feed page %d: %v", o, pages, err)
			}
			out = append(out, p.Items...)
			req.After, req.HasAfter = p.Position, true
			if len(p.Items) == 0 || pages > 500 {
				break
			}
		}
		return m.compareSet(o.coll, fmt.Sprintf("%s: change feed", o), out, all)
	}
}

func (m *mRun) bulkOp(o mop) error {
	coll := mColls[o.coll]
	s := m.models[o.coll]
	var ops []BatchOp
	for _, b := range o.batch {
		ifMatch := m.ifMatchFor(o.coll, s, b)
		op := BatchOp{Type: b.kind, ID: fmt.Sprintf("i%d", b.id), IfMatch: ifMatch, PK: pkFor(o.coll, b.pk)}
		switch b.kind {
		case "create", "upsert", "replace":
			op.Body, _ = json.Marshal(b.body)
		case "patch":
			op.Body = patchBody(b)
		}
		ops = append(ops, op)
	}
	resp, err := m.e.ExecuteBulk(m.ctx, "db", coll, ops)
	if err != nil {
		return fmt.Errorf("%s: %v", o, err)
	}
	for i, b := range o.batch {
		want, body := m.expect(o.coll, s, b, ops[i].IfMatch)
		r := resp.Results[i]
		if r.Status != want {
			return fmt.Errorf("%s: op %d status %d (%s), model %d", o, i, r.Status, r.Message, want)
		}
		if want < 300 {
			if err := m.applyResult(o.coll, s, b, r.Body, r.ETag, body); err != nil {
				return err
			}
		}
	}
	for _, b := range o.batch {
		if err := m.checkPoint(o.coll, mKey{b.pk, b.id}); err != nil {
			return fmt.Errorf("after %s: %v", o, err)
		}
	}
	return nil
}

// compareScopes compares what read returns (the documents of a scope, in
// pages of the given size) with the model's live items of container coll:
// the whole container, the union of its ranges, and each partition key.
func (m *mRun) compareScopes(coll int, what string, read func(Scope, int) ([][]byte, error)) error {
	name := mColls[coll]
	all := func(mKey, *mItem) bool { return true }
	docs, err := read(Scope{}, 3)
	if err != nil {
		return err
	}
	if err := m.compareSet(coll, name+": "+what, docs, all); err != nil {
		return err
	}
	c, err := m.e.container("db", name)
	if err != nil {
		return err
	}
	var union [][]byte
	for _, r := range c.Map().Ranges() {
		docs, err := read(Scope{RangeID: r.ID}, 2)
		if err != nil {
			return err
		}
		union = append(union, docs...)
	}
	if err := m.compareSet(coll, name+": "+what+" by range", union, all); err != nil {
		return err
	}
	for pk := range mPKs {
		docs, err := read(Scope{PK: pkFor(coll, pk)}, 2)
		if err != nil {
			return err
		}
		if err := m.compareSet(coll, fmt.Sprintf("%s: %s of p%d", name, what, pk), docs, func(k mKey, _ *mItem) bool { return k.pk == pk }); err != nil {
			return err
		}
	}
	return nil
}

// pickRange returns the id of the range of o's container that o picks.
func (m *mRun) pickRange(o mop) (string, error) {
	c, err := m.e.container("db", mColls[o.coll])
	if err != nil {
		return "", err
	}
	rs := c.Map().Ranges()
	return rs[o.pick%len(rs)].ID, nil
}

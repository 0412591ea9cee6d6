package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// lpTxn is a transaction on one logical partition, the unit of atomicity
// (DESIGN §1): the partition's lock is held for its whole life, reads see
// its own writes, and commit applies every write at once in one store batch
// (durable when acknowledged). Every item operation — a single write, a
// transactional batch, a stored procedure with its triggers — runs in one.
//
// An lpTxn is not safe for concurrent use.
type lpTxn struct {
	e      *Engine
	c      *catalog.Container
	pk     document.PartitionKey
	epk    partition.EPK
	rng    partition.Range
	pkEnc  []byte
	rep    replica.Replica // the keyspace of rng
	b      replica.Batch   // indexed: reads see the transaction's writes
	unlock func()
	rule   document.IDRule
	lsn    uint64  // the last LSN this transaction took from rep
	first  uint64  // the first one (it holds rep's stable mark)
	ru     float64 // work done so far
	// condSpent is the time its patch conditions took so far: together
	// they may take QueryMaxTime (a batch of 100 patches, each with a
	// condition just short of the bound, held the logical partition for
	// 100 times it: a bug hunt). Only their own evaluation counts, not the
	// time between them.
	condSpent time.Duration
	done      bool
	system    bool // the engine's own work: not admitted, not charged
	// stats are the logical partition's statistics as this transaction
	// leaves them; loaded on first use, written at commit when dirty.
	stats                   lpStats
	statsLoaded, statsDirty bool
	// grew is how many bytes the transaction added to the logical
	// partition (negative: removed), for the range's size estimate.
	grew int64
	// wrote is set once the transaction writes an item: its container is
	// then one for the split check to look at (grown).
	wrote bool
	// mem is what it reserved to index documents (reserve).
	mem int64
	// changes are the change entries the transaction set and left set:
	// their LSNs and item keys (moveChange). When there are several, commit
	// marks each with the largest of their LSNs (changeValue).
	changes []txnChange
	// changeBuf holds the first of changes: most transactions write one
	// item, and a write's path allocates no slice for it.
	changeBuf [1]txnChange
}

// txnChange is a change entry a transaction set (lpTxn.changes).
type txnChange struct {
	lsn uint64
	key []byte
}

// begin locks logical partition pk of container c and starts a transaction
// on it. pk must be a full key of c's definition. The caller must call
// close (after commit, or to roll back).
func (e *Engine) begin(ctx context.Context, c *catalog.Container, pk document.PartitionKey) (*lpTxn, error) {
	return e.beginTxn(ctx, c, pk, false)
}

// errContainerGone is returned by beginSystem when the container was
// deleted (or replaced by another of the same name); a client's
// transaction gets 404 then.
var errContainerGone = errors.New("engine: the container is gone")

// beginSystem is begin for the engine's own work (purging expired items):
// the transaction is neither admitted nor charged, and a container deleted
// meanwhile gets errContainerGone.
func (e *Engine) beginSystem(c *catalog.Container, pk document.PartitionKey) (*lpTxn, error) {
	return e.beginTxn(context.Background(), c, pk, true)
}

func (e *Engine) beginTxn(ctx context.Context, c *catalog.Container, pk document.PartitionKey, system bool) (*lpTxn, error) {
	release := e.colls.shared(c.Internal)
	// Under the container's lock, the catalog's entry is current: an
	// indexing policy replaced meanwhile applies to this transaction.
	cur, err := e.cat.Container(c.DB, c.ID)
	switch {
	case err == nil && cur.Internal == c.Internal:
		c = cur
	case system:
		release()
		return nil, errContainerGone
	default:
		// Deleted (or deleted and created again) since the request looked
		// it up: its keyspaces are gone or going, and a write to them would
		// be lost, or in a cluster wait for a leader of a group that no
		// longer exists and answer 503.
		release()
		return nil, translate(fmt.Errorf("container %s: deleted while the request waited: %w", c.ID, catalog.ErrNotFound))
	}
	loc, err := locate(c, pk, "")
	var rep replica.Replica
	if err == nil {
		rep, err = e.replicaOf(c, loc.rng)
	}
	if err == nil {
		// A replicated keyspace's writes are evaluated on its leader only,
		// before the transaction reads or is charged.
		err = translate(rep.Lead())
	}
	if err == nil && e.cfg.Replicated {
		// A move the catalog has not shown this node yet is fenced in the
		// keyspace (fence.go): the leader has applied its fence before it
		// evaluates anything (the settled-leader rule).
		ks, _ := c.Keyspace(loc.rng.ID)
		err = translate(e.checkFence(rep, ks, loc.epk))
	}
	if err == nil && !system {
		err = e.admitLP(ctx, c, loc.rng, pk)
	}
	if err != nil {
		release()
		return nil, err
	}
	rule := document.StrictIDs
	if e.cfg.LenientIDs {
		rule = document.LenientIDs
	}
	t := &lpTxn{e: e, c: c, pk: pk, epk: loc.epk, rng: loc.rng, pkEnc: loc.pkEnc, rep: rep, rule: rule, system: system}
	unlock := e.locks.lock(loc.lockKey())
	t.unlock = func() {
		unlock()
		release()
	}
	t.b = rep.NewBatch(true)
	return t, nil
}

// close releases the transaction: an uncommitted one is rolled back.
func (t *lpTxn) close() {
	if t.done {
		return
	}
	t.done = true
	t.b.Close()
	t.releaseMemory()
	t.rep.ReleaseLSN(t.first)
	t.unlock()
	if !t.system {
		t.e.chargeLP(t.c, t.rng, t.pk.String(), max(t.ru, throughput.MinimumCost()))
	}
}

// commit applies the transaction's writes atomically and releases it.
func (t *lpTxn) commit() error {
	if t.done {
		return fmt.Errorf("engine: commit of a finished transaction")
	}
	t.writeStats()
	t.markChanges()
	var err error
	if !t.b.Empty() {
		err = t.rep.Commit(t.b)
	}
	t.done = true
	t.b.Close()
	t.releaseMemory()
	t.rep.ReleaseLSN(t.first)
	t.unlock()
	if err == nil && t.wrote {
		t.e.sizes.add(rangeKey(t.c, t.rng), t.grew)
		t.e.grown.mark(t.c.Internal)
	}
	ru := t.ru
	if err != nil {
		ru = max(ru, throughput.MinimumCost())
	}
	if !t.system {
		t.e.chargeLP(t.c, t.rng, t.pk.String(), ru)
	}
	return translate(err)
}

// markChanges marks the change entries of a transaction that left several
// with the largest of their LSNs, so that the change feed delivers them in
// one page (changeValue).
func (t *lpTxn) markChanges() {
	if len(t.changes) < 2 {
		return
	}
	var end uint64
	for _, ch := range t.changes {
		end = max(end, ch.lsn)
	}
	for _, ch := range t.changes {
		t.b.Set(changeKey(ch.lsn), changeValue(ch.key, end))
	}
}

// writeStats puts the logical partition's statistics in the batch, if the
// transaction changed them.
func (t *lpTxn) writeStats() {
	if !t.statsDirty {
		return
	}
	t.stats.key = t.pk.String()
	k := statsKey(t.epk, t.pkEnc)
	if t.stats.items <= 0 {
		t.b.Delete(k)
	} else {
		t.b.Set(k, t.stats.encode())
	}
}

func (t *lpTxn) key(id string) []byte {
	return itemKey{EPK: t.epk, PK: t.pkEnc, ID: id}.encode()
}

func (t *lpTxn) session() string {
	if t.lsn == 0 {
		return t.e.session(t.rng.ID, t.rep.LastLSN())
	}
	return t.e.session(t.rng.ID, t.lsn)
}

// load reads item id as the transaction sees it: stored JSON, system
// properties, and whether it exists (a missing item is not an error here).
// An item past its time to live, or hidden by a partition key delete, does
// not exist: load purges it, so the transaction goes on as if it had been
// purged before.
func (t *lpTxn) load(id string) (stored []byte, props document.SystemProps, exists bool, err error) {
	key := t.key(id)
	stored, err = t.b.Get(key)
	if errors.Is(err, replica.ErrNotFound) {
		return nil, document.SystemProps{}, false, nil
	}
	if err != nil {
		return nil, document.SystemProps{}, false, translate(err)
	}
	if props, err = document.Props(stored); err != nil {
		return nil, document.SystemProps{}, false, translate(fmt.Errorf("stored item %q: %w", id, err))
	}
	if t.e.invisible(t.c, key, props) {
		if _, err := t.erase(id, stored, props); err != nil {
			return nil, document.SystemProps{}, false, err
		}
		return nil, document.SystemProps{}, false, nil
	}
	return stored, props, true, nil
}

// loadExisting is load for an item that must exist (404 otherwise).
func (t *lpTxn) loadExisting(id string) ([]byte, document.SystemProps, error) {
	stored, props, exists, err := t.load(id)
	if err == nil && !exists {
		err = status.NotFound()
	}
	return stored, props, err
}

// ifMatchFails reports whether an If-Match precondition rejects etag.
var ifMatchFails = document.IfMatchFails

// put stores item with fresh system properties. old is the item's stored
// body and props its system properties when it exists (nil otherwise): an
// existing item keeps its _rid. A write that would break one of the
// container's unique keys gets 409 (checkUnique) and writes nothing.
func (t *lpTxn) put(item *document.Item, old []byte, props document.SystemProps) (Result, error) {
	lsn, err := t.rep.NextLSN(t.b, &t.first)
	if err != nil {
		return Result{}, translate(err)
	}
	t.lsn = lsn
	exists := old != nil
	rid := props.RID
	if !exists {
		n, err := t.e.rids.next(t.c)
		if err != nil {
			return Result{}, translate(err)
		}
		collRID, _ := document.DecodeRID(t.c.RID)
		rid = document.EncodeRID(binary.BigEndian.AppendUint64(collRID, n))
	}
	seq, err := ridSeq(rid)
	if err != nil {
		return Result{}, translate(fmt.Errorf("stored item %q: %w", item.ID, err))
	}
	sp := document.SystemProps{
		RID: rid, Self: document.ItemSelf(t.c.DBRID, t.c.RID, rid), ETag: document.ItemETag(t.c.Internal, lsn), TS: t.e.now().Unix(),
	}
	out := item.Marshal(sp)
	if len(out) > t.e.cfg.MaxItemBytes {
		return Result{}, tooLargeStored(len(out), t.e.cfg.MaxItemBytes)
	}
	if _, on := t.c.DefaultTTL(); on {
		if _, _, err := item.TTL(); err != nil {
			return Result{}, translate(err)
		}
	}
	if err := t.reserve(old, out); err != nil {
		return Result{}, err
	}
	unique, err := t.checkUnique(item.ID, old, out)
	if err != nil {
		return Result{}, err
	}
	created := int64(0)
	if !exists {
		created = 1
	}
	if err := t.grow(int64(len(out))-int64(len(old)), created); err != nil {
		return Result{}, err
	}
	// Every refusal is above: from here on the write is staged.
	if err := t.applyUnique(item.ID, unique); err != nil {
		return Result{}, err
	}
	key := t.key(item.ID)
	terms, err := t.indexItem(key, seq, old, out)
	if err != nil {
		return Result{}, err
	}
	if err := t.moveChange(key, props.ETag, lsn); err != nil {
		return Result{}, err
	}
	t.b.Set(key, out)
	ru := throughput.WriteCost(len(out), terms)
	t.ru += ru
	return Result{Body: out, ETag: sp.ETag, RU: ru, Session: t.e.session(t.rng.ID, lsn), Created: !exists}, nil
}

// tooLarge is the 413 of an item body of n bytes (UTF-8) over limit.
func tooLarge(n, limit int) *status.Error {
	return status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the item is %d bytes, the limit is %d bytes", n, limit)
}

// tooLargeStored is the 413 of an item of n bytes as stored, over limit:
// the client's body fit, its system properties took it past (a bug hunt: a
// body of 2,097,072 bytes was refused as "2097272 bytes").
func tooLargeStored(n, limit int) *status.Error {
	return status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the item is %d bytes with the system properties the server adds (_rid, _self, _etag, _ts, _attachments: about 200 bytes), the limit is %d bytes", n, limit)
}

// parseItem parses an item body for this partition: valid, and with this
// transaction's partition key (400/1001 otherwise).
func (t *lpTxn) parseItem(body []byte) (*document.Item, error) {
	// Stored and measured as UTF-8, as Cosmos DB measures an item,
	// whatever escapes the client wrote (document.UnescapeNonASCII).
	body = document.UnescapeNonASCII(body)
	if len(body) > t.e.cfg.MaxItemBytes {
		return nil, tooLarge(len(body), t.e.cfg.MaxItemBytes)
	}
	item, err := document.ParseItemWith(body, t.c.PK.Paths, t.rule)
	if err != nil {
		return nil, translate(err)
	}
	if !item.PK.Equal(t.pk) {
		return nil, pkMismatch()
	}
	return item, nil
}

// MaxPKValueBytes bounds the UTF-8 bytes of a partition key's string value
// (each value of a hierarchical key) of a new item: Cosmos DB's limit
// ("Large partition keys": values up to 2 KB; a container of hash version
// 1 hashes only their first 100 bytes, which Partita keeps apart
// nonetheless). Items stored before the limit was enforced keep their key:
// they are read, replaced, patched and deleted as before.
const MaxPKValueBytes = 2048

// checkNewKey refuses a new item whose partition key has a string value
// over MaxPKValueBytes.
func checkNewKey(pk document.PartitionKey) error {
	for _, v := range pk {
		if v.Kind == document.String && len(v.String) > MaxPKValueBytes {
			return status.BadRequest("the partition key value is %d bytes long, over the limit of %d bytes (Cosmos DB's \"large partition key\" limit)",
				len(v.String), MaxPKValueBytes)
		}
	}
	return nil
}

// write creates, upserts or replaces an item from body. urlID is the id a
// Replace addresses (it must match the body's).
func (t *lpTxn) write(kind WriteKind, urlID string, body []byte, ifMatch string) (Result, error) {
	item, err := t.parseItem(body)
	if err != nil {
		return Result{}, err
	}
	if kind == Replace && item.ID != urlID {
		return Result{}, status.BadRequest("the id %q in the body does not match the id %q in the URL", item.ID, urlID)
	}
	stored, old, exists, err := t.load(item.ID)
	if err != nil {
		return Result{}, err
	}
	switch {
	case kind == Create && exists:
		return Result{}, status.Conflict()
	case kind == Replace && !exists:
		return Result{}, status.NotFound()
	case !exists:
		if err := checkNewKey(item.PK); err != nil {
			return Result{}, err
		}
	case exists && ifMatchFails(ifMatch, old.ETag):
		// If-Match holds a write to an existing item only: an upsert of a
		// missing item creates it, and a create ignores it (Cosmos DB
		// applies If-Match to replaces and deletes).
		return Result{}, status.PreconditionFailed()
	}
	return t.put(item, stored, old)
}

// read returns item id.
func (t *lpTxn) read(id string) (Result, error) {
	v, props, err := t.loadExisting(id)
	if err != nil {
		return Result{}, err
	}
	ru := throughput.ReadCost(len(v))
	t.ru += ru
	return Result{Body: v, ETag: props.ETag, RU: ru, Session: t.session()}, nil
}

// remove deletes item id.
func (t *lpTxn) remove(id, ifMatch string) (Result, error) {
	old, props, err := t.loadExisting(id)
	if err != nil {
		return Result{}, err
	}
	if ifMatchFails(ifMatch, props.ETag) {
		return Result{}, status.PreconditionFailed()
	}
	terms, err := t.erase(id, old, props)
	if err != nil {
		return Result{}, err
	}
	ru := throughput.WriteCost(len(old), terms)
	t.ru += ru
	return Result{RU: ru, Session: t.e.session(t.rng.ID, t.lsn)}, nil
}

// erase deletes item id, stored as old with system properties props, with
// everything kept for it (index, order and change entries, statistics),
// and returns how many index terms it removed. It charges nothing: remove
// charges a delete, and an expired item's purge is free.
func (t *lpTxn) erase(id string, old []byte, props document.SystemProps) (terms int, err error) {
	lsn, err := t.rep.NextLSN(t.b, &t.first)
	if err != nil {
		return 0, translate(err)
	}
	t.lsn = lsn
	return t.drop(id, old, props)
}

// drop deletes item id, stored as old with system properties props, with
// its derived entries and its share of the statistics, and returns how many
// index terms it removed: erase without taking an LSN.
func (t *lpTxn) drop(id string, old []byte, props document.SystemProps) (terms int, err error) {
	seq, err := ridSeq(props.RID)
	if err != nil {
		return 0, translate(fmt.Errorf("stored item %q: %w", id, err))
	}
	if err := t.reserve(old); err != nil {
		return 0, err
	}
	unique, err := t.checkUnique(id, old, nil)
	if err != nil {
		return 0, err
	}
	if err := t.grow(-int64(len(old)), -1); err != nil {
		return 0, err
	}
	if err := t.applyUnique(id, unique); err != nil {
		return 0, err
	}
	key := t.key(id)
	if terms, err = t.indexItem(key, seq, old, nil); err != nil {
		return 0, err
	}
	if err := t.moveChange(key, props.ETag, 0); err != nil {
		return 0, err
	}
	t.b.Delete(key)
	return terms, nil
}

// patch applies a parsed patch request to item id. Its condition is
// evaluated under ctx and within the transaction's time for conditions
// (condSpent: QueryMaxTime, as a query page's, for all of them together):
// the transaction holds its logical partition meanwhile. The condition's
// rows past the item itself (its subqueries' and their JOINs') are charged
// as a query's are.
func (t *lpTxn) patch(ctx context.Context, id string, req document.PatchRequest, ifMatch string) (Result, error) {
	var (
		cond   *exec.Program
		condRU float64 // what evaluating the condition cost
	)
	if req.Condition != "" {
		var err error
		if cond, err = t.e.compileCondition(t.c, req.Condition); err != nil {
			return Result{}, err
		}
	}
	old, props, err := t.loadExisting(id)
	if err != nil {
		return Result{}, err
	}
	if ifMatchFails(ifMatch, props.ETag) {
		return Result{}, status.PreconditionFailed()
	}
	if cond != nil {
		var rows atomic.Int64
		start := time.Now()
		mctx, cancel := context.WithTimeout(exec.WithRowCount(ctx, &rows), t.e.cfg.QueryMaxTime-t.condSpent)
		ok, err := cond.Match(mctx, old)
		timedOut := errors.Is(mctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		t.condSpent += time.Since(start)
		condRU = throughput.RowsCost(int(rows.Load()))
		if !t.system {
			t.ru += condRU // charged even when the condition fails (close)
		}
		// A failure is charged for the rows evaluated (the transaction's
		// budget took them already: the client must see why its next
		// requests get 429s).
		if timedOut {
			return Result{}, withCharge(status.Newf(http.StatusRequestTimeout, "the patch condition %s ran past what remained of %v, the time the patch conditions of one request may take together (the rows of their JOINs or subqueries are more than can be evaluated in that time): nothing was patched", quoteCondition(req.Condition), t.e.cfg.QueryMaxTime), condRU)
		}
		if err != nil {
			return Result{}, withCharge(translate(err), condRU)
		}
		if !ok {
			return Result{}, withCharge(status.New(http.StatusPreconditionFailed, "the patch condition "+quoteCondition(req.Condition)+" is not met"), condRU)
		}
	}
	patched, err := document.ApplyPatch(old, req.Operations)
	if err != nil {
		return Result{}, translate(err)
	}
	item, err := document.ParseItemWith(document.UnescapeNonASCII(patched), t.c.PK.Paths, document.LenientIDs)
	if err != nil {
		return Result{}, translate(err)
	}
	if !item.PK.Equal(t.pk) {
		return Result{}, status.BadRequest("a patch cannot change the partition key %s of an item", t.pk)
	}
	res, err := t.put(item, old, props)
	res.RU += condRU
	return res, err
}

// scan calls fn with every item of the logical partition as the transaction
// sees it, in id order; fn returns false to stop.
func (t *lpTxn) scan(ctx context.Context, fn func(stored []byte) bool) error {
	return t.scanFrom(ctx, nil, func(_, v []byte) bool { return fn(v) })
}

// scanFrom is scan from the item whose key is from on (nil: the first),
// with each item's key. It stops when ctx ends, before every item: what fn
// does with one (a script's query: UDF calls, rows of megabytes) may be
// far more than reading it (replica.Scan looks at ctx every 256).
func (t *lpTxn) scanFrom(ctx context.Context, from []byte, fn func(key, stored []byte) bool) error {
	span := logicalSpan(t.epk, t.pkEnc)
	if bytes.Compare(from, span.Lower) > 0 {
		span.Lower = from
	}
	loaded := 0
	hidden := t.e.goneFilter(t.c)
	var ended error
	err := replica.Scan(ctx, t.b, span, func(k, v []byte) bool {
		if ended = ctx.Err(); ended != nil {
			return false
		}
		loaded++
		return (hidden != nil && hidden(k, v)) || fn(k, v)
	})
	t.ru += throughput.QueryCost(loaded, 0, 1)
	if err == nil {
		err = ended
	}
	return translate(err)
}

// quoteCondition quotes a patch condition for a message, its first 200
// bytes at most: a condition may be 256 KB, and a message echoing it whole
// made every 412 as large (a security review).
func quoteCondition(cond string) string {
	const most = 200
	if len(cond) <= most {
		return strconv.Quote(cond)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(cond[cut]) {
		cut--
	}
	return strconv.Quote(cond[:cut]) + fmt.Sprintf(" (the first %d of its %d bytes)", cut, len(cond))
}

// compileCondition compiles a patch condition, "FROM c WHERE ...", over
// c's items: its computed properties read as in a query.
func (e *Engine) compileCondition(c *catalog.Container, cond string) (*exec.Program, error) {
	ast, err := parse.Parse("SELECT * " + cond)
	if err != nil {
		return nil, status.BadRequest("invalid patch condition %s: %v", quoteCondition(cond), err)
	}
	// A condition filters one item: other clauses would be ignored (an
	// OFFSET that selects nothing still patched: a bug hunt).
	switch {
	case ast.From == nil:
		return nil, status.BadRequest("invalid patch condition %s: it must start with FROM", quoteCondition(cond))
	case len(ast.Joins) > 0 || ast.From.In || ast.From.Subquery != nil:
		return nil, status.BadRequest("invalid patch condition %s: it filters the item alone (FROM c WHERE …), without JOIN, IN or a subquery as its source", quoteCondition(cond))
	case len(ast.GroupBy) > 0 || len(ast.OrderBy) > 0 || ast.Offset != nil || ast.Limit != nil:
		return nil, status.BadRequest("invalid patch condition %s: it may only have a WHERE clause after FROM, not GROUP BY, ORDER BY or OFFSET LIMIT", quoteCondition(cond))
	}
	if ast, _, err = e.withComputed(c, ast, ""); err != nil {
		return nil, err
	}
	prog, err := exec.Compile(ast, nil)
	if err != nil {
		return nil, translate(err)
	}
	return prog, nil
}

// lpStats are a logical partition's statistics, kept exact by every
// transaction on it (statsKey).
type lpStats struct {
	bytes, items int64  // stored item bytes and item count
	key          string // the partition key as JSON, for reports
}

func (s lpStats) encode() []byte {
	b := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(s.bytes)), uint64(s.items))
	return append(b, s.key...)
}

func decodeStats(v []byte) (lpStats, error) {
	bytes, items, err := statsCounts(v)
	if err != nil {
		return lpStats{}, err
	}
	return lpStats{bytes: bytes, items: items, key: string(v[16:])}, nil
}

// statsCounts decodes the item bytes and items of encoded statistics,
// without the key (decodeStats).
func statsCounts(v []byte) (bytes, items int64, err error) {
	if len(v) < 16 {
		return 0, 0, fmt.Errorf("engine: logical partition statistics of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), nil
}

// grow records that the logical partition's items change by bytes and
// items, refusing growth past the logical partition cap with 403/1014
// (before anything is written).
func (t *lpTxn) grow(bytes, items int64) error {
	t.wrote = true
	if bytes == 0 && items == 0 {
		// The statistics stay as they are: neither read nor rewrite
		// them. (An upsert of an item by one of the same size, as
		// updates of fixed-size records are, saves a read of the store.)
		return nil
	}
	if !t.statsLoaded {
		v, err := t.b.Get(statsKey(t.epk, t.pkEnc))
		switch {
		case err == nil:
			if t.stats, err = decodeStats(v); err != nil {
				return translate(err)
			}
		case !errors.Is(err, replica.ErrNotFound):
			return translate(err)
		}
		t.statsLoaded = true
	}
	next := t.stats.bytes + bytes
	if limit := t.e.cfg.LogicalPartitionMaxBytes; bytes > 0 && next > limit {
		// Items no read sees any more (past their time to live, or hidden
		// by a pending partition key delete) count until they are erased:
		// erase them first, as many as the write needs room for (a bug
		// hunt: a partition emptied by a delete refused a write for the
		// bytes its background deletion had not erased yet).
		if err := t.makeRoom(next - limit); err != nil {
			return err
		}
		next = t.stats.bytes + bytes
	}
	if limit := t.e.cfg.LogicalPartitionMaxBytes; bytes > 0 && next > limit {
		return status.Newf(http.StatusForbidden, "Partition key reached maximum size of %s: the logical partition %s holds %d bytes and this write would take it to %d",
			formatBytes(limit), t.pk, t.stats.bytes, next).WithSub(status.SubForbiddenPKQuotaOverLimit)
	}
	t.stats.bytes, t.stats.items, t.statsDirty = next, t.stats.items+items, true
	t.grew += bytes
	return nil
}

// Bounds of the erasures a write makes room with (makeRoom): the items it
// looks at, and those it erases.
const (
	roomScanItems  = 10000
	roomEraseItems = 1000
)

// makeRoom erases items of the transaction's logical partition that no read
// sees any more (invisible: expired, or hidden by a pending partition key
// delete) until need bytes are freed or none is left, looking at up to
// roomScanItems items and erasing up to roomEraseItems, each charged as a
// delete of its item, as the background work would be.
func (t *lpTxn) makeRoom(need int64) error {
	if t.e.goneFilter(t.c) == nil {
		return nil // nothing of the container can be invisible
	}
	invisible := func(key []byte, props document.SystemProps) (bool, error) {
		return t.e.invisible(t.c, key, props), nil
	}
	_, _, err := t.eraseWhere(context.Background(), invisible, roomEraseItems, need, roomScanItems)
	return err
}

// formatBytes writes n as Cosmos DB's messages do: "20 GB", or bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

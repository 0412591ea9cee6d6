package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/throughput"
)

// ItemRef names an item: database, container and item id.
type ItemRef struct {
	DB, Container, ID string
}

// WriteKind selects what a write does when the item exists or not.
type WriteKind int

// The kinds of item write.
const (
	Create  WriteKind = iota // fails with 409 if the item exists
	Upsert                   // creates or replaces
	Replace                  // fails with 404 if the item does not exist
)

// Write is an item create, upsert or replace.
type Write struct {
	DB, Container string
	Kind          WriteKind
	// ID is the id from the URL (Replace only); it must match the body's.
	ID string
	// PK is the partition key from the request header; nil when absent.
	PK   document.PartitionKey
	Body []byte
	// IfMatch, when set, requires the current item's etag ("*": any existing item).
	IfMatch string
}

// Result is the outcome of an item operation.
type Result struct {
	Body    []byte // the stored item (nil for deletes)
	ETag    string
	RU      float64
	Session string // x-ms-session-token
	Created bool   // a write created a new item (201 rather than 200)
}

// Charge returns the request charge of a failed operation: Cosmos DB charges
// failed requests too.
func Charge(err error) float64 {
	if err == nil {
		return 0
	}
	return throughput.MinimumCost()
}

// located is an item's place: container, partition key, EPK, owning range
// and storage key.
type located struct {
	c     *catalog.Container
	pk    document.PartitionKey
	epk   partition.EPK
	rng   partition.Range
	pkEnc []byte
	key   []byte
}

func (l located) lockKey() string {
	return strconv.FormatUint(l.c.Internal, 16) + "/" + string(l.pkEnc)
}

// locate finds where the item with partition key pk and id lives. pk must be
// a full key of c's definition.
func locate(c *catalog.Container, pk document.PartitionKey, id string) (located, error) {
	if pk == nil {
		return located{}, status.BadRequest("PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey header)")
	}
	if len(pk) != len(c.PK.Paths) {
		return located{}, status.BadRequest("partition key %s has %d components; the container's definition has %d paths",
			pk, len(pk), len(c.PK.Paths))
	}
	epk, err := c.PK.Hash(pk)
	if err != nil {
		return located{}, translate(err)
	}
	l := located{c: c, pk: pk, epk: epk, rng: c.Map().Locate(epk), pkEnc: pk.AppendEncoded(nil)}
	l.key = store.ItemKey{Container: c.Internal, EPK: epk, PK: l.pkEnc, ID: id}.Encode()
	return l, nil
}

// load reads the item at loc: its stored JSON and system properties, and
// whether it exists (a missing item is not an error here).
func (e *Engine) load(loc located) (stored []byte, props document.SystemProps, exists bool, err error) {
	stored, err = e.data.Get(loc.key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, document.SystemProps{}, false, nil
	}
	if err != nil {
		return nil, document.SystemProps{}, false, translate(err)
	}
	if props, err = document.Props(stored); err != nil {
		return nil, document.SystemProps{}, false, translate(fmt.Errorf("stored item %s: %w", loc.key, err))
	}
	return stored, props, true, nil
}

// loadExisting is load for operations on an item that must exist (404).
func (e *Engine) loadExisting(loc located) ([]byte, document.SystemProps, error) {
	stored, props, exists, err := e.load(loc)
	if err == nil && !exists {
		err = status.NotFound()
	}
	return stored, props, err
}

// ifMatchFails reports whether an If-Match precondition rejects etag.
func ifMatchFails(ifMatch, etag string) bool {
	return ifMatch != "" && ifMatch != "*" && ifMatch != etag
}

func (e *Engine) session(rangeID string, lsn uint64) string {
	return fmt.Sprintf("%s:-1#%d", rangeID, lsn)
}

// Session returns a session token for reads of a range, reflecting every
// write acknowledged so far.
func (e *Engine) readSession(rangeID string) string {
	return e.session(rangeID, e.seq.last())
}

// WriteItem creates, upserts or replaces an item.
//
// Errors (as *status.Error): 404 when the container or (Replace) the item
// does not exist; 400 for a malformed body, missing or mismatched partition
// key (substatus 1001); 413 when the body exceeds the item size limit; 409
// when Create finds the item; 412 when IfMatch does not match.
func (e *Engine) WriteItem(ctx context.Context, w Write) (Result, error) {
	if len(w.Body) > e.cfg.MaxItemBytes {
		return Result{}, status.Newf(http.StatusRequestEntityTooLarge,
			"Request size is too large: the item is %d bytes, the limit is %d bytes", len(w.Body), e.cfg.MaxItemBytes)
	}
	c, err := e.container(w.DB, w.Container)
	if err != nil {
		return Result{}, err
	}
	rule := document.StrictIDs
	if e.cfg.LenientIDs {
		rule = document.LenientIDs
	}
	item, err := document.ParseItemWith(w.Body, c.PK.Paths, rule)
	if err != nil {
		return Result{}, translate(err)
	}
	if w.Kind == Replace && item.ID != w.ID {
		return Result{}, status.BadRequest("the id %q in the body does not match the id %q in the URL", item.ID, w.ID)
	}
	if w.PK != nil && !w.PK.Equal(item.PK) {
		return Result{}, pkMismatch()
	}
	loc, err := locate(c, w.PK, item.ID)
	if err != nil {
		return Result{}, err
	}

	unlock := e.locks.lock(loc.lockKey())
	defer unlock()
	_, oldProps, exists, err := e.load(loc)
	if err != nil {
		return Result{}, err
	}
	switch {
	case w.Kind == Create && exists:
		return Result{}, status.Conflict()
	case w.Kind == Replace && !exists:
		return Result{}, status.NotFound()
	case w.IfMatch != "" && (!exists || ifMatchFails(w.IfMatch, oldProps.ETag)):
		if !exists && w.Kind != Upsert {
			return Result{}, status.NotFound()
		}
		return Result{}, status.PreconditionFailed()
	}
	return e.commitItem(c, loc, item, exists, oldProps.RID)
}

// commitItem stores item at loc with fresh system properties, keeping rid
// when the item existed. The caller holds loc's logical-partition lock.
func (e *Engine) commitItem(c *catalog.Container, loc located, item *document.Item, exists bool, rid string) (Result, error) {
	lsn, err := e.seq.next()
	if err != nil {
		return Result{}, translate(err)
	}
	if !exists {
		collRID, _ := document.DecodeRID(c.RID)
		rid = document.EncodeRID(binary.BigEndian.AppendUint64(collRID, lsn))
	}
	sp := document.SystemProps{
		RID: rid, Self: document.ItemSelf(c.DBRID, c.RID, rid), ETag: document.ETag(lsn), TS: e.now().Unix(),
	}
	out := item.Marshal(sp)
	b := e.data.NewBatch()
	defer b.Close()
	b.Set(loc.key, out)
	if err := b.Commit(); err != nil {
		return Result{}, translate(err)
	}
	return Result{
		Body: out, ETag: sp.ETag, RU: throughput.WriteCost(len(out)),
		Session: e.session(loc.rng.ID, lsn), Created: !exists,
	}, nil
}

// PatchItem applies a patch request (protocol doc §8.2) to an item: the
// operations, atomically, if the optional condition holds.
//
// Errors: 404 when the item does not exist; 400 for a malformed request, an
// operation that does not apply (e.g. removing a missing path), or a patch
// that changes the partition key; 412 when ifMatch does not match or the
// condition is false.
func (e *Engine) PatchItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, body []byte, ifMatch string) (Result, error) {
	c, err := e.container(ref.DB, ref.Container)
	if err != nil {
		return Result{}, err
	}
	req, err := document.ParsePatchRequest(body)
	if err != nil {
		return Result{}, translate(err)
	}
	var cond *exec.Program
	if req.Condition != "" {
		if cond, err = compileCondition(req.Condition); err != nil {
			return Result{}, err
		}
	}
	loc, err := locate(c, pk, ref.ID)
	if err != nil {
		return Result{}, err
	}
	unlock := e.locks.lock(loc.lockKey())
	defer unlock()
	old, props, err := e.loadExisting(loc)
	if err != nil {
		return Result{}, err
	}
	if ifMatchFails(ifMatch, props.ETag) {
		return Result{}, status.PreconditionFailed()
	}
	if cond != nil {
		ok, err := cond.Match(old)
		if err != nil {
			return Result{}, translate(err)
		}
		if !ok {
			return Result{}, status.New(http.StatusPreconditionFailed, "the patch condition "+strconv.Quote(req.Condition)+" is not met")
		}
	}
	patched, err := document.ApplyPatch(old, req.Operations)
	if err != nil {
		return Result{}, translate(err)
	}
	item, err := document.ParseItemWith(patched, c.PK.Paths, document.LenientIDs)
	if err != nil {
		return Result{}, translate(err)
	}
	if !item.PK.Equal(loc.pk) {
		return Result{}, status.BadRequest("a patch cannot change the partition key %s of an item", loc.pk)
	}
	if len(patched) > e.cfg.MaxItemBytes {
		return Result{}, status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the patched item would be %d bytes, the limit is %d", len(patched), e.cfg.MaxItemBytes)
	}
	return e.commitItem(c, loc, item, true, props.RID)
}

// compileCondition compiles a patch condition, "FROM c WHERE ...".
func compileCondition(cond string) (*exec.Program, error) {
	ast, err := parse.Parse("SELECT * " + cond)
	if err != nil {
		return nil, status.BadRequest("invalid patch condition %q: %v", cond, err)
	}
	prog, err := exec.Compile(ast, nil)
	if err != nil {
		return nil, translate(err)
	}
	return prog, nil
}

// ReadItem returns an item. With ifNoneMatch equal to the item's etag it
// returns a Result with a nil Body: not modified. Errors: 404, 400 for a
// missing or malformed partition key.
func (e *Engine) ReadItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, ifNoneMatch string) (Result, error) {
	c, err := e.container(ref.DB, ref.Container)
	if err != nil {
		return Result{}, err
	}
	loc, err := locate(c, pk, ref.ID)
	if err != nil {
		return Result{}, err
	}
	v, props, err := e.loadExisting(loc)
	if err != nil {
		return Result{}, err
	}
	r := Result{Body: v, ETag: props.ETag, RU: throughput.ReadCost(len(v)), Session: e.readSession(loc.rng.ID)}
	if ifNoneMatch != "" && (ifNoneMatch == "*" || ifNoneMatch == props.ETag) {
		r.Body = nil
	}
	return r, nil
}

// DeleteItem deletes an item. Errors: 404, 412 when ifMatch does not match.
func (e *Engine) DeleteItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, ifMatch string) (Result, error) {
	c, err := e.container(ref.DB, ref.Container)
	if err != nil {
		return Result{}, err
	}
	loc, err := locate(c, pk, ref.ID)
	if err != nil {
		return Result{}, err
	}
	unlock := e.locks.lock(loc.lockKey())
	defer unlock()
	old, props, err := e.loadExisting(loc)
	if err != nil {
		return Result{}, err
	}
	if ifMatchFails(ifMatch, props.ETag) {
		return Result{}, status.PreconditionFailed()
	}
	lsn, err := e.seq.next()
	if err != nil {
		return Result{}, translate(err)
	}
	b := e.data.NewBatch()
	defer b.Close()
	b.Delete(loc.key)
	if err := b.Commit(); err != nil {
		return Result{}, translate(err)
	}
	return Result{RU: throughput.WriteCost(len(old)), Session: e.session(loc.rng.ID, lsn)}, nil
}

// pkRangeRID is the _rid of a container's i-th range: the container's 8 RID
// bytes and 8 bytes numbering the range.
func pkRangeRID(c *catalog.Container, i int) string {
	collRID, _ := document.DecodeRID(c.RID)
	id, _ := strconv.ParseUint(c.Map().Ranges()[i].ID, 10, 64)
	return document.EncodeRID(binary.BigEndian.AppendUint64(collRID, id<<8|0x50))
}

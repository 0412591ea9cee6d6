package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
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
	// Triggers are the pre- and post-triggers the request includes.
	Triggers TriggerSet
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
// failed requests too, and one that did work before it failed (a patch
// whose condition ran and was not met) is charged for that work.
func Charge(err error) float64 {
	if err == nil {
		return 0
	}
	ru := throughput.MinimumCost()
	if c, ok := errors.AsType[*chargedError](err); ok {
		ru = max(ru, c.ru) // as the transaction charged its budget (lpTxn.close)
	}
	return ru
}

// chargedError is an operation's error with what its work before the
// failure costs (Charge).
type chargedError struct {
	err error
	ru  float64
}

func (c *chargedError) Error() string { return c.err.Error() }
func (c *chargedError) Unwrap() error { return c.err }

// sessionError is a refusal of an item operation with the session token of
// its partition as the operation saw it (ErrorSession).
type sessionError struct {
	err     error
	session string
}

func (s *sessionError) Error() string { return s.err.Error() }
func (s *sessionError) Unwrap() error { return s.err }

// withSession returns err carrying the partition's session token when err
// is one of the refusals whose token the SDKs keep: 404 (other than
// 404/1002), 409 and 412. @azure/cosmos's captureSessionToken reads the
// token of exactly those; they carried none.
func withSession(err error, session string) error {
	se, ok := errors.AsType[*status.Error](err)
	if !ok || session == "" {
		return err
	}
	switch {
	case se.Code == http.StatusNotFound && se.Sub != status.SubNotFoundReadSessionNotAvailable,
		se.Code == http.StatusConflict, se.Code == http.StatusPreconditionFailed:
		return &sessionError{err: err, session: session}
	}
	return err
}

// ErrorSession returns the session token an engine error carries (see
// withSession), or "".
func ErrorSession(err error) string {
	if s, ok := errors.AsType[*sessionError](err); ok {
		return s.session
	}
	return ""
}

// withCharge returns err carrying ru of work (nil stays nil).
func withCharge(err error, ru float64) error {
	if err == nil || ru <= 0 {
		return err
	}
	return &chargedError{err: err, ru: ru}
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

// noneKey is the partition key of a system key's "none" partition: the items
// of a non-partitioned container that have no _partitionKey. It is one
// Undefined component, at the empty EPK (partition.Definition.IsNone).
func noneKey() document.PartitionKey {
	return document.PartitionKey{{Kind: document.Undefined}}
}

// pointKey returns the partition key a point operation (a read, write,
// batch or stored procedure) on c addresses, given the request's header
// value pk (nil when absent). On a container with a system key (created
// non-partitioned) no header, or the empty key [], addresses the none
// partition: that is how the SDKs send PartitionKey.None there (.NET and
// @azure/cosmos send [], ContainerProperties.GetNoneValue's
// PartitionKeyInternal.Empty; azcosmos omits the header for
// NewPartitionKey()), and how clients of non-partitioned containers, which
// send no header, reach their items.
func pointKey(c *catalog.Container, pk document.PartitionKey) document.PartitionKey {
	if c.PK.SystemKey && len(pk) == 0 {
		return noneKey()
	}
	return pk
}

// scopeKey is pointKey for the partition key of a query or feed scope, where
// an absent header means the whole container: only [] is the none
// partition of a system key.
func scopeKey(c *catalog.Container, pk document.PartitionKey) document.PartitionKey {
	if c.PK.SystemKey && pk != nil && len(pk) == 0 {
		return noneKey()
	}
	return pk
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
	l.key = itemKey{EPK: epk, PK: l.pkEnc, ID: id}.encode()
	return l, nil
}

// session returns the session token of a write or read at lsn of range
// rangeID: "<range>:-1#<lsn>".
func (e *Engine) session(rangeID string, lsn uint64) string {
	return string(SessionToken{RangeID: rangeID, LSN: lsn}.AppendTo(make([]byte, 0, len(rangeID)+24)))
}

// AppendTo appends t in the session token format, "<range>:-1#<lsn>".
func (t SessionToken) AppendTo(b []byte) []byte {
	b = append(append(b, t.RangeID...), ":-1#"...)
	return strconv.AppendUint(b, t.LSN, 10)
}

// WriteItem creates, upserts or replaces an item, in a transaction of its
// own on the item's logical partition.
//
// Errors (as *status.Error): 404 when the container or (Replace) the item
// does not exist; 400 for a malformed body, missing or mismatched partition
// key (substatus 1001); 413 when the body exceeds the item size limit; 409
// when Create finds the item; 412 when IfMatch does not match.
func (e *Engine) WriteItem(ctx context.Context, w Write) (Result, error) {
	w.Body = document.UnescapeNonASCII(w.Body) // measured as stored (lpTxn.parseItem)
	if len(w.Body) > e.cfg.MaxItemBytes {
		return Result{}, tooLarge(len(w.Body), e.cfg.MaxItemBytes)
	}
	c, err := e.owner(w.DB, w.Container)
	if err != nil {
		return Result{}, err
	}
	w.PK = pointKey(c, w.PK)
	if w.PK == nil {
		return Result{}, status.BadRequest("PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey header)")
	}
	t, err := e.begin(ctx, c, w.PK)
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	opName := [...]string{Create: "Create", Upsert: "Upsert", Replace: "Replace"}[w.Kind]
	res, err := e.withTriggers(ctx, t, w.Triggers, opName, w.Body, func(body []byte) (Result, error) {
		return t.write(w.Kind, w.ID, body, w.IfMatch)
	})
	if err != nil {
		return Result{}, withSession(err, t.session())
	}
	return res, t.commit()
}

// PatchItem applies a patch request (protocol doc §8.2) to an item: the
// operations, atomically, if the optional condition holds.
//
// Errors: 404 when the item does not exist; 400 for a malformed request, an
// operation that does not apply (e.g. removing a missing path), or a patch
// that changes the partition key; 412 when ifMatch does not match or the
// condition is false.
func (e *Engine) PatchItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, body []byte, ifMatch string) (Result, error) {
	c, err := e.owner(ref.DB, ref.Container)
	if err != nil {
		return Result{}, err
	}
	req, err := document.ParsePatchRequest(body)
	if err != nil {
		return Result{}, translate(err)
	}
	t, err := e.begin(ctx, c, pointKey(c, pk))
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	res, err := t.patch(ctx, ref.ID, req, ifMatch)
	if err != nil {
		return Result{}, withSession(err, t.session())
	}
	return res, t.commit()
}

// ReadItem returns an item. With ifNoneMatch equal to the item's etag it
// returns a Result with a nil Body: not modified. Errors: 404, 400 for a
// missing or malformed partition key. Reads take no lock: they see the last
// committed version.
func (e *Engine) ReadItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, ifNoneMatch string) (Result, error) {
	c, release, err := e.readContainer(ctx, ref.DB, ref.Container, "")
	if err != nil {
		return Result{}, err
	}
	defer release()
	pk = pointKey(c, pk)
	loc, err := locate(c, pk, ref.ID)
	if err != nil {
		return Result{}, err
	}
	if err := e.admitLP(ctx, c, loc.rng, pk); err != nil {
		return Result{}, err
	}
	rep, err := e.replicaOf(c, loc.rng)
	if err == nil && linearizable(ctx) {
		err = translate(rep.Sync(ctx))
	}
	if err != nil {
		return Result{}, err
	}
	v, err := rep.Get(loc.key)
	if e.cfg.Replicated {
		// After the read: a moved item's leftover is collected after the
		// fence, and replaced in its new keyspace only after it too.
		ks, _ := c.Keyspace(loc.rng.ID)
		if ferr := e.checkFence(rep, ks, loc.epk); ferr != nil {
			return Result{}, translate(ferr)
		}
	}
	if err != nil {
		e.chargeFailed(c, 0, loc.rng)
	}
	if errors.Is(err, replica.ErrNotFound) {
		return Result{}, withSession(status.NotFound(), e.session(loc.rng.ID, rep.LastLSN()))
	}
	if err != nil {
		return Result{}, translate(err)
	}
	props, err := document.Props(v)
	if err != nil {
		return Result{}, translate(err)
	}
	if e.invisible(c, loc.key, props) {
		e.chargeFailed(c, 0, loc.rng)
		return Result{}, withSession(status.NotFound(), e.session(loc.rng.ID, rep.LastLSN()))
	}
	r := Result{Body: v, ETag: props.ETag, RU: throughput.ReadCost(len(v)), Session: e.session(loc.rng.ID, rep.LastLSN())}
	e.chargeLP(c, loc.rng, pk.String(), r.RU)
	if ifNoneMatch != "" && (ifNoneMatch == "*" || ifNoneMatch == props.ETag) {
		r.Body = nil
	}
	return r, nil
}

// DeleteItem deletes an item. Errors: 404, 412 when ifMatch does not match.
func (e *Engine) DeleteItem(ctx context.Context, ref ItemRef, pk document.PartitionKey, ifMatch string, trig TriggerSet) (Result, error) {
	c, err := e.owner(ref.DB, ref.Container)
	if err != nil {
		return Result{}, err
	}
	t, err := e.begin(ctx, c, pointKey(c, pk))
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	var current []byte
	if len(trig.Pre)+len(trig.Post) > 0 {
		if current, _, err = t.loadExisting(ref.ID); err != nil {
			return Result{}, withSession(err, t.session())
		}
	}
	res, err := e.withTriggers(ctx, t, trig, "Delete", current, func([]byte) (Result, error) {
		return t.remove(ref.ID, ifMatch)
	})
	if err != nil {
		return Result{}, withSession(err, t.session())
	}
	return res, t.commit()
}

// pkRangeRID is the _rid of a container's i-th range: the container's 8 RID
// bytes and 8 bytes numbering the range.
func pkRangeRID(c *catalog.Container, i int) string {
	collRID, _ := document.DecodeRID(c.RID)
	id, _ := strconv.ParseUint(c.Map().Ranges()[i].ID, 10, 64)
	return document.EncodeRID(binary.BigEndian.AppendUint64(collRID, id<<8|0x50))
}

package catalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/partition"
)

// Backend keys.
const (
	keyDB       = "cat/db/"    // + db id
	keyColl     = "cat/coll/"  // + db id + "\x00" + container id
	keyOffer    = "cat/offer/" // + offer id
	keySeq      = "cat/seq"
	keyKeyspace = "cat/keyspace" // the last keyspace id allocated
	// keyLegacySeq is the node-wide LSN reservation of releases before
	// keyspaces (storage format 6): every _rid they issued lies below it.
	keyLegacySeq = "eng/seq"
)

// maxKeyspace bounds the keyspace ids the catalog allocates: below 2^32,
// so they never meet the ids of containers converted from format 6, whose
// keyspace is their internal id (at least 2^32: the database's sequence
// number in the high half).
const maxKeyspace = 1<<32 - 1

// ridBlock is how many _rid sequence numbers ReserveRIDs hands out at
// least: a block costs one catalog write, and a restart skips the rest of
// it.
const ridBlock = 1 << 16

// Throughput is provisioned throughput as a client asks for it: manual RU/s,
// or autoscale with a maximum. The zero value means "none requested".
type Throughput struct {
	Manual       int // RU/s; 0 when autoscale or unset
	AutoscaleMax int // RU/s; 0 when manual or unset
}

// Migration is the change of throughput mode a replace of an offer asks
// for (ReplaceOffer).
type Migration int

const (
	NoMigration Migration = iota // the offer keeps its mode
	ToAutoscale                  // x-ms-cosmos-migrate-offer-to-autopilot
	ToManual                     // x-ms-cosmos-migrate-offer-to-manual-throughput
)

// IsZero reports whether no throughput was requested.
func (t Throughput) IsZero() bool { return t.Manual == 0 && t.AutoscaleMax == 0 }

// validate checks t the way Cosmos DB does (protocol doc §9).
// MaxThroughput bounds a container's or a shared database's provisioned
// throughput, manual or autoscale maximum: Cosmos DB's default limit
// (1,000,000 RU/s; the service raises it on request). It also bounds the
// physical partitions a container starts with or splits into for its
// throughput (one per 6,000 or 10,000 RU/s): an unbounded value would
// make a single request allocate or split without end.
const MaxThroughput = 1_000_000

// MaxSystemKeyThroughput is the most a container created without a partition
// key (the system key, partition.Definition.SystemKey) may be provisioned
// with: Cosmos DB documents non-partitioned containers as "not elastic",
// with "fixed storage capacity of 20 GB and throughput limit of 10K RU/s".
// Such a container starts as one physical partition and is not split for
// throughput: the SDKs of its API version query it without the
// cross-partition header, which a second partition would make them need (a
// Python SDK hunt: at 10,000 RU/s it started with two, and every plain
// query was refused). Its items with a _partitionKey value (which newer
// SDKs write) may still outgrow a partition and split by size, as a
// container migrated to the system key does.
const MaxSystemKeyThroughput = 10_000

// systemKeyThroughput checks tp for a container with the system key.
func systemKeyThroughput(tp Throughput) error {
	if tp.Manual > MaxSystemKeyThroughput || tp.AutoscaleMax > MaxSystemKeyThroughput {
		return invalid(fmt.Sprintf("throughput %d RU/s is above the limit of a container without a partition key, %d RU/s: "+
			"create the container with a partition key to provision more", max(tp.Manual, tp.AutoscaleMax), MaxSystemKeyThroughput))
	}
	return nil
}

func (t Throughput) validate() error {
	switch {
	case t.Manual > MaxThroughput:
		return invalid(fmt.Sprintf("throughput %d RU/s is above the maximum, %d RU/s", t.Manual, MaxThroughput))
	case t.AutoscaleMax > MaxThroughput:
		return invalid(fmt.Sprintf("autoscale max throughput %d RU/s is above the maximum, %d RU/s", t.AutoscaleMax, MaxThroughput))
	case t.Manual != 0 && t.AutoscaleMax != 0:
		return invalid("specify either manual throughput or autoscale settings, not both")
	case t.Manual != 0 && (t.Manual < 400 || t.Manual%100 != 0):
		return invalid(fmt.Sprintf("throughput %d RU/s is invalid: it must be at least 400 and a multiple of 100", t.Manual))
	case t.AutoscaleMax != 0 && (t.AutoscaleMax < 1000 || t.AutoscaleMax%1000 != 0):
		return invalid(fmt.Sprintf("autoscale max throughput %d RU/s is invalid: it must be at least 1000 and a multiple of 1000", t.AutoscaleMax))
	case t.Manual < 0 || t.AutoscaleMax < 0:
		return invalid("throughput must be positive")
	}
	return nil
}

// Database is a database's catalog entry.
type Database struct {
	ID      string `json:"id"`
	RID     string `json:"rid"`
	TS      int64  `json:"ts"`
	ETag    string `json:"etag"`
	OfferID string `json:"offer,omitempty"` // shared throughput offer, if any
}

// Self is the database's _self link.
func (d *Database) Self() string { return "dbs/" + d.RID + "/" }

// JSON returns the database resource as the wire protocol returns it.
func (d *Database) JSON() []byte {
	b, _ := json.Marshal(map[string]any{
		"id": d.ID, "_rid": d.RID, "_self": d.Self(), "_etag": d.ETag, "_colls": "colls/", "_users": "users/", "_ts": d.TS,
	})
	return b
}

// Offer is provisioned throughput on a database or container.
type Offer struct {
	ID           string `json:"id"` // lower-case, also its _rid
	Manual       int    `json:"manual,omitempty"`
	AutoscaleMax int    `json:"autoscaleMax,omitempty"`
	ResourceSelf string `json:"resource"` // target's _self
	ResourceRID  string `json:"resourceRid"`
	DB           string `json:"db"`
	Container    string `json:"container,omitempty"` // empty for a database offer
	TS           int64  `json:"ts"`
	ETag         string `json:"etag"`
	// Highest is the most RU/s ever provisioned on the offer (the manual
	// value or the autoscale maximum), which bounds how far it can be
	// lowered (MinThroughput). Offers written before it was kept have 0:
	// their current throughput stands in.
	Highest int `json:"highest,omitempty"`
}

// highest is the most RU/s ever provisioned on o.
func (o *Offer) highest() int { return max(o.Highest, o.MaxThroughput()) }

// Peak is the most RU/s ever provisioned on o (its manual throughput or
// autoscale maximum, now or before): what its physical partitions were
// split for, which lowering it does not undo.
func (o *Offer) Peak() int { return o.highest() }

// JSON returns the offer resource as the wire protocol returns it.
func (o *Offer) JSON() []byte {
	content := map[string]any{"offerIsRUPerMinuteThroughputEnabled": false}
	if o.AutoscaleMax > 0 {
		content["offerThroughput"] = o.AutoscaleMax / 10
		content["offerAutopilotSettings"] = map[string]any{"maxThroughput": o.AutoscaleMax, "tier": 0, "maximumTierThroughput": 0, "autoUpgrade": false}
	} else {
		content["offerThroughput"] = o.Manual
	}
	content["offerMinimumThroughputParameters"] = map[string]any{"maxThroughputEverProvisioned": o.highest()}
	b, _ := json.Marshal(map[string]any{
		"id": o.ID, "_rid": o.ID, "_self": "offers/" + o.ID + "/", "_etag": o.ETag, "_ts": o.TS,
		"offerVersion": "V2", "offerType": "Invalid", "resource": o.ResourceSelf, "offerResourceId": o.ResourceRID,
		"content": content,
	})
	return b
}

// MaxThroughput is the RU/s the offer can serve at most: the manual value or
// the autoscale maximum.
func (o *Offer) MaxThroughput() int { return max(o.Manual, o.AutoscaleMax) }

// RangeRecord is one physical partition as persisted.
type RangeRecord struct {
	ID      string   `json:"id"`
	Min     string   `json:"min"` // EPK hex
	Max     string   `json:"max"`
	Parents []string `json:"parents,omitempty"`
	// Keyspace is the keyspace holding the range's data
	// (docs/storage-seams.md): its own from creation, its parent's after a
	// split (siblings share it).
	Keyspace uint64 `json:"keyspace"`
	// From is the keyspace the range's data was copied from when it got a
	// keyspace of its own (MoveRange), until the engine has deleted what it
	// left there (Collected); 0 when none.
	From uint64 `json:"from,omitempty"`
	// Moving is the keyspace the range's data is being copied to by a
	// separation under way (BeginMove), until it is recorded (MoveRange)
	// or abandoned (AbandonMove); 0 when none. A moving range does not
	// split (ErrMoving).
	Moving uint64 `json:"moving,omitempty"`
	// Cut is the LSN a separation advanced the range's keyspace to
	// after its last copy round (MoveRange; 0 for none, or unknown): a
	// replica of the keyspace that has not reached it may lack part of
	// the copy, and serves no read of the range (the engine's cut check).
	// A split's children inherit it with the keyspace.
	Cut uint64 `json:"cut,omitempty"`
}

// Container is a container's catalog entry.
type Container struct {
	DB       string               `json:"db"`
	ID       string               `json:"id"`
	RID      string               `json:"rid"`
	DBRID    string               `json:"dbRid"`
	Internal uint64               `json:"internal"` // store key prefix: the 8 RID bytes
	PK       partition.Definition `json:"pk"`
	Body     json.RawMessage      `json:"body"` // resource JSON without system properties
	TS       int64                `json:"ts"`
	ETag     string               `json:"etag"`
	OfferID  string               `json:"offer,omitempty"`
	// Ranges is the partition map as persisted; RangesVersion counts its
	// changes (the pkranges feed's etag) and NextRangeID is the next unused id.
	Ranges        []RangeRecord `json:"ranges"`
	RangesVersion int           `json:"rangesVersion"`
	NextRangeID   int           `json:"nextRangeId"`
	// Indexed is the indexing policy (JSON, as in Body) that the container's
	// index entries reflect; it differs from the current one until the
	// engine has rebuilt them after a policy change.
	Indexed string `json:"indexed,omitempty"`
	// RIDLimit is the end of the _rid sequence numbers reserved so far
	// (ReserveRIDs): every item's _rid sequence lies below it.
	RIDLimit uint64 `json:"ridLimit"`

	pmap      *partition.Map
	policy    *index.Policy
	policyRaw string
	ttl       int64 // DefaultTTL
	ttlOn     bool
	unique    uniqueKeys // UniqueKeys; fixed at creation
}

// Self is the container's _self link.
func (c *Container) Self() string { return "dbs/" + c.DBRID + "/colls/" + c.RID + "/" }

// Link is the container's name-based link, dbs/{db}/colls/{id}.
func (c *Container) Link() string { return "dbs/" + c.DB + "/colls/" + c.ID }

// Map returns the container's partition map.
func (c *Container) Map() *partition.Map { return c.pmap }

// Keyspace returns the keyspace holding range id's data, and whether the
// container has that range.
func (c *Container) Keyspace(rangeID string) (uint64, bool) {
	for _, r := range c.Ranges {
		if r.ID == rangeID {
			return r.Keyspace, true
		}
	}
	return 0, false
}

// Record returns range id's record, and whether the container has that
// range.
func (c *Container) Record(rangeID string) (RangeRecord, bool) {
	for _, r := range c.Ranges {
		if r.ID == rangeID {
			return r, true
		}
	}
	return RangeRecord{}, false
}

// Targets returns the keyspaces the container's ranges are being moved to
// (RangeRecord.Moving), in range order: referenced like Keyspaces, though
// nothing reads them yet.
func (c *Container) Targets() []uint64 {
	var out []uint64
	for _, r := range c.Ranges {
		if r.Moving != 0 {
			out = append(out, r.Moving)
		}
	}
	return out
}

// Keyspaces returns the keyspaces holding the container's data, in range
// order, each once.
func (c *Container) Keyspaces() []uint64 {
	var out []uint64
	for _, r := range c.pmap.Ranges() {
		ks, _ := c.Keyspace(r.ID)
		if !slices.Contains(out, ks) {
			out = append(out, ks)
		}
	}
	return out
}

// JSON returns the container resource as the wire protocol returns it: the
// stored definition plus system properties.
func (c *Container) JSON() []byte {
	sys := fmt.Sprintf(`"_rid":%q,"_ts":%d,"_self":%q,"_etag":%s,"_docs":"docs/","_sprocs":"sprocs/","_triggers":"triggers/","_udfs":"udfs/","_conflicts":"conflicts/"`,
		c.RID, c.TS, c.Self(), jsonString(c.ETag))
	body := strings.TrimSpace(string(c.Body))
	if body == "{}" {
		return []byte("{" + sys + "}")
	}
	return []byte(body[:len(body)-1] + "," + sys + "}")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Policy is the container's current indexing policy.
func (c *Container) Policy() *index.Policy { return c.policy }

// IndexCurrent reports whether the container's index entries reflect its
// current indexing policy.
func (c *Container) IndexCurrent() bool { return c.Indexed == c.policyRaw }

// PolicyJSON is the container's current indexing policy as JSON, the value
// MarkIndexed takes.
func (c *Container) PolicyJSON() string { return c.policyRaw }

// derive computes what a container holds besides its persisted fields: the
// partition map and the parsed indexing policy.
func (c *Container) derive() error {
	if err := c.buildMap(); err != nil {
		return err
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(c.Body)
	if err != nil {
		return fmt.Errorf("container %s/%s: %w", c.DB, c.ID, err)
	}
	raw := document.AppendJSON(nil, v.Get("indexingPolicy"))
	if c.policy, err = index.ParsePolicy(raw); err != nil {
		return fmt.Errorf("container %s/%s: %w", c.DB, c.ID, err)
	}
	c.policyRaw = string(raw)
	c.ttl, c.ttlOn = parseDefaultTTL(v)
	c.unique, _ = parseUniqueKeys(v.Get("uniqueKeyPolicy")) // parseDefinition refused invalid ones
	return nil
}

func (c *Container) buildMap() error {
	rs := make([]partition.Range, len(c.Ranges))
	for i, r := range c.Ranges {
		lo, err := partition.ParseEPK(r.Min)
		if err != nil {
			return err
		}
		hi, err := partition.ParseEPK(r.Max)
		if err != nil {
			return err
		}
		rs[i] = partition.Range{ID: r.ID, Min: lo, Max: hi, Parents: r.Parents}
	}
	m, err := partition.NewMap(rs)
	if err != nil {
		return fmt.Errorf("container %s/%s: %w", c.DB, c.ID, err)
	}
	c.pmap = m
	return nil
}

// Catalog holds all metadata. It is safe for concurrent use; mutations are
// serialised (they are rare), lookups take a read lock only.
type Catalog struct {
	be     Backend
	shared Shared // be, when other nodes write it too; else nil
	now    func() time.Time

	mu struct {
		sync.RWMutex
		seq      uint64
		keyspace uint64 // the last keyspace id allocated
		dbs      map[string]*Database
		colls    map[string]map[string]*Container // db → id → container
		offers   map[string]*Offer
	}
}

// Open loads the catalog from be. now supplies _ts values.
//
// Containers written by releases before keyspaces (storage format 6) get
// theirs here, in one batch: every range the keyspace numbered by the
// container's internal id, where replica.OpenLocal moved their items, and
// _rid sequence numbers from the old node-wide reservation on.
func Open(ctx context.Context, be Backend, now func() time.Time) (*Catalog, error) {
	c := &Catalog{be: be, now: now}
	c.shared, _ = be.(Shared)
	c.mu.dbs = map[string]*Database{}
	c.mu.colls = map[string]map[string]*Container{}
	c.mu.offers = map[string]*Offer{}
	for _, rec := range []struct {
		key string
		to  *uint64
	}{{keySeq, &c.mu.seq}, {keyKeyspace, &c.mu.keyspace}} {
		v, ok, err := be.Get(rec.key)
		switch {
		case err != nil:
			return nil, fmt.Errorf("catalog: %w", err)
		case ok && len(v) != 8:
			return nil, fmt.Errorf("catalog: bad %s record", rec.key)
		case ok:
			*rec.to = binary.BigEndian.Uint64(v)
		}
	}
	scan := func(prefix string, fn func(v []byte) error) error {
		return be.Load(ctx, prefix, func(_ string, v []byte) error { return fn(v) })
	}
	if err := scan(keyDB, func(v []byte) error {
		var d Database
		if err := json.Unmarshal(v, &d); err != nil {
			return err
		}
		c.mu.dbs[d.ID] = &d
		c.mu.colls[d.ID] = map[string]*Container{}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("catalog: load databases: %w", err)
	}
	if err := scan(keyColl, func(v []byte) error {
		var k Container
		if err := json.Unmarshal(v, &k); err != nil {
			return err
		}
		if err := k.derive(); err != nil {
			return err
		}
		if c.mu.colls[k.DB] == nil {
			return fmt.Errorf("container %s/%s has no database", k.DB, k.ID)
		}
		c.mu.colls[k.DB][k.ID] = &k
		return nil
	}); err != nil {
		return nil, fmt.Errorf("catalog: load containers: %w", err)
	}
	if err := scan(keyOffer, func(v []byte) error {
		var o Offer
		if err := json.Unmarshal(v, &o); err != nil {
			return err
		}
		c.mu.offers[o.ID] = &o
		return nil
	}); err != nil {
		return nil, fmt.Errorf("catalog: load offers: %w", err)
	}
	if err := c.upgradeLegacy(); err != nil {
		return nil, err
	}
	return c, nil
}

// upgradeLegacy gives containers written before keyspaces theirs (see
// Open).
func (c *Catalog) upgradeLegacy() error {
	var legacy []*Container
	for _, m := range c.mu.colls {
		for _, k := range m {
			if k.RIDLimit == 0 {
				legacy = append(legacy, k)
			}
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	floor := uint64(1)
	if v, ok, err := c.be.Get(keyLegacySeq); err != nil {
		return fmt.Errorf("catalog: %w", err)
	} else if ok && len(v) == 8 {
		floor = max(floor, binary.BigEndian.Uint64(v))
	}
	ch := newChanges()
	var up []*Container
	for _, old := range legacy {
		k := *old
		k.Ranges = slices.Clone(old.Ranges)
		for i := range k.Ranges {
			if k.Ranges[i].Keyspace == 0 {
				k.Ranges[i].Keyspace = k.Internal
			}
		}
		k.RIDLimit = floor
		putJSON(ch, collKey(k.DB, k.ID), &k)
		up = append(up, &k)
	}
	if err := ch.apply(c.be); err != nil {
		return err
	}
	for _, k := range up {
		if err := k.derive(); err != nil {
			return err
		}
		c.mu.colls[k.DB][k.ID] = k
	}
	return nil
}

// maxKeyspaceTries bounds how many keyspace ids BeginMove passes over.
const maxKeyspaceTries = 1 << 16

// newKeyspaceLocked allocates a keyspace id, recorded in ch.
func (c *Catalog) newKeyspaceLocked(ch *changes) (uint64, error) {
	if c.mu.keyspace >= maxKeyspace {
		return 0, fmt.Errorf("catalog: keyspace ids exhausted")
	}
	c.mu.keyspace++
	ch.put(keyKeyspace, binary.BigEndian.AppendUint64(nil, c.mu.keyspace))
	return c.mu.keyspace, nil
}

// Allocated reports whether ks is a keyspace id the catalog has handed out,
// to a container or a range, live or deleted since: one of the ids
// newKeyspaceLocked allocated, or a container's internal id (the keyspace
// of a container converted from storage format 6), whose low half is a
// sequence number taken. Ids are never handed out twice, so a keyspace no
// container refers to whose id is allocated holds a deleted container's
// data, or an abandoned separation's, which the engine drops; one whose id
// is not allocated came from elsewhere.
func (c *Catalog) Allocated(ks uint64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if ks > maxKeyspace {
		return ks&maxKeyspace != 0 && ks&maxKeyspace <= c.mu.seq
	}
	return ks != 0 && ks <= c.mu.keyspace
}

// BeginMove allocates a keyspace for range rangeID of container db/id
// (internal id internal), which lives in keyspace from, and records that
// the range is being copied there (RangeRecord.Moving), in one change: from
// then on the keyspace is referenced, so every node of a cluster creates
// its replica. The new keyspace is the next id that accept takes (nil:
// the next; in a cluster, one the separating node holds a replica of: ids
// passed over are never used). It returns the new keyspace's id; ErrNotFound when
// the container or the range is gone; an *InvalidError when the range
// does not live in from, has leftovers not yet collected, or is already
// moving.
func (c *Catalog) BeginMove(db, id string, internal uint64, rangeID string, from uint64, accept func(uint64) bool) (*Container, uint64, error) {
	var to uint64
	k, err := c.updateRangeLocked(db, id, internal, rangeID, func(r *RangeRecord, ch *changes) error {
		if r.Keyspace != from || r.From != 0 || r.Moving != 0 {
			return invalid(fmt.Sprintf("range %s lives in keyspace %d (from %d, moving to %d), not %d alone", rangeID, r.Keyspace, r.From, r.Moving, from))
		}
		var ks uint64
		for tries := 0; ; tries++ {
			var err error
			if ks, err = c.newKeyspaceLocked(ch); err != nil {
				return err
			}
			if accept == nil || accept(ks) {
				break
			}
			if tries == maxKeyspaceTries {
				return fmt.Errorf("catalog: no keyspace id among %d tried is accepted for a move from keyspace %d", tries+1, from)
			}
		}
		r.Moving, to = ks, ks
		return nil
	})
	return k, to, err
}

// MoveRange records that range rangeID of container db/id (internal id
// internal) now lives in keyspace to, having been copied from keyspace
// from (BeginMove), whose leftovers the engine must then collect. It
// returns ErrNotFound when the container or the range is gone, and an
// *InvalidError when the range does not live in from or is not moving to
// to.
func (c *Catalog) MoveRange(db, id string, internal uint64, rangeID string, from, to, cut uint64) (*Container, error) {
	return c.updateRange(db, id, internal, rangeID, func(r *RangeRecord) error {
		if r.Keyspace != from || r.From != 0 || r.Moving != to {
			return invalid(fmt.Sprintf("range %s lives in keyspace %d (from %d, moving to %d), not %d moving to %d", rangeID, r.Keyspace, r.From, r.Moving, from, to))
		}
		r.Keyspace, r.From, r.Moving, r.Cut = to, from, 0, cut
		return nil
	})
}

// AbandonMove records that range rangeID no longer moves to keyspace to
// (BeginMove): nothing refers to that keyspace any more, and every node
// drops its replica. It returns ErrNotFound when the container or the range
// is gone, and an *InvalidError when the range is not moving to to.
func (c *Catalog) AbandonMove(db, id string, internal uint64, rangeID string, to uint64) (*Container, error) {
	return c.updateRange(db, id, internal, rangeID, func(r *RangeRecord) error {
		if r.Moving != to {
			return invalid(fmt.Sprintf("range %s is moving to keyspace %d, not %d", rangeID, r.Moving, to))
		}
		r.Moving = 0
		return nil
	})
}

// Collected records that the engine deleted what range rangeID left in the
// keyspace it moved from.
func (c *Catalog) Collected(db, id string, internal uint64, rangeID string) (*Container, error) {
	return c.updateRange(db, id, internal, rangeID, func(r *RangeRecord) error {
		r.From = 0
		return nil
	})
}

func (c *Catalog) updateRange(db, id string, internal uint64, rangeID string, fn func(*RangeRecord) error) (*Container, error) {
	return c.updateRangeLocked(db, id, internal, rangeID, func(r *RangeRecord, _ *changes) error { return fn(r) })
}

// updateRangeLocked changes range rangeID's record with fn, which may add
// changes of its own to the same atomic change (ch).
func (c *Catalog) updateRangeLocked(db, id string, internal uint64, rangeID string, fn func(*RangeRecord, *changes) error) (*Container, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok || old.Internal != internal {
		return nil, ErrNotFound
	}
	k := *old
	k.Ranges = slices.Clone(old.Ranges)
	i := slices.IndexFunc(k.Ranges, func(r RangeRecord) bool { return r.ID == rangeID })
	if i < 0 {
		return nil, ErrNotFound
	}
	ch := newChanges()
	keyspace := c.mu.keyspace
	if err := fn(&k.Ranges[i], ch); err != nil {
		c.mu.keyspace = keyspace
		return nil, err
	}
	if err := k.buildMap(); err != nil {
		c.mu.keyspace = keyspace
		return nil, err
	}
	if err := c.saveChangesLocked(ch, &k); err != nil {
		c.mu.keyspace = keyspace // no keyspace id was allocated
		return nil, err
	}
	return &k, nil
}

// saveLocked persists container record k and makes it the current one.
func (c *Catalog) saveLocked(k *Container) error {
	return c.saveChangesLocked(newChanges(), k)
}

// saveChangesLocked persists container record k with the other changes of
// ch, atomically, and makes it the current one.
func (c *Catalog) saveChangesLocked(ch *changes, k *Container) error {
	putJSON(ch, collKey(k.DB, k.ID), k)
	if err := ch.apply(c.be); err != nil {
		return err
	}
	c.mu.colls[k.DB][k.ID] = k
	return nil
}

// ReserveRIDs reserves at least n _rid sequence numbers of container db/id
// (the one with internal id internal): the numbers [first, limit). They are
// unique in the container, whichever keyspace its items live in, and
// increase with each reservation. It returns ErrNotFound when the container
// is gone.
func (c *Catalog) ReserveRIDs(db, id string, internal uint64, n uint64) (first, limit uint64, err error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok || old.Internal != internal {
		return 0, 0, ErrNotFound
	}
	k := *old
	first = max(k.RIDLimit, 1)
	k.RIDLimit = first + max(n, ridBlock)
	if err := c.saveLocked(&k); err != nil {
		return 0, 0, err
	}
	return first, k.RIDLimit, nil
}

// nextLocked returns the next catalog sequence number.
func (c *Catalog) nextLocked() uint64 {
	c.mu.seq++
	return c.mu.seq
}

func (c *Catalog) putSeqLocked(ch *changes) {
	ch.put(keySeq, binary.BigEndian.AppendUint64(nil, c.mu.seq))
}

func putJSON(ch *changes, key string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("catalog: marshal %T: %v", v, err)) // our own types always marshal
	}
	ch.put(key, data)
}

func collKey(db, id string) string { return keyColl + db + "\x00" + id }

// Database returns the database id, or ErrNotFound.
func (c *Catalog) Database(id string) (*Database, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.mu.dbs[id]
	if !ok {
		return nil, ErrNotFound
	}
	return d, nil
}

// Databases returns all databases in creation order.
func (c *Catalog) Databases() []*Database {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Database, 0, len(c.mu.dbs))
	for _, d := range c.mu.dbs {
		out = append(out, d)
	}
	// By _rid, which a database takes from the catalog's sequence: its
	// creation order, one per database. By _ts (seconds) the databases
	// created in one second came in a different order each time, and a
	// client paging the feed got some twice and others never (a bug hunt).
	slices.SortFunc(out, func(a, b *Database) int {
		return cmp.Or(cmp.Compare(ridOrder(a.RID), ridOrder(b.RID)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// ridOrder is a database's _rid as the number it encodes (its creation
// sequence); 0 for one that is not (none is).
func ridOrder(rid string) uint64 {
	b, err := document.DecodeRID(rid)
	if err != nil || len(b) > 8 {
		return 0
	}
	var n uint64
	for _, x := range b {
		n = n<<8 | uint64(x)
	}
	return n
}

// CreateDatabase creates database id, with shared throughput when tp is not
// zero. It returns ErrExists or an *InvalidError.
func (c *Catalog) CreateDatabase(id string, tp Throughput) (*Database, error) {
	if err := document.ValidateID(id); err != nil {
		return nil, invalid(err.(*document.InvalidError).Msg)
	}
	if err := tp.validate(); err != nil {
		return nil, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := c.mu.dbs[id]; ok {
		return nil, ErrExists
	}
	seq := c.nextLocked()
	d := &Database{ID: id, RID: document.EncodeRID(binary.BigEndian.AppendUint32(nil, uint32(seq))), TS: c.now().Unix(), ETag: document.ETag(seq)}
	ch := newChanges()
	var offer *Offer
	if !tp.IsZero() {
		offer = c.newOfferLocked(tp, d.Self(), d.RID, id, "")
		d.OfferID = offer.ID
		putJSON(ch, keyOffer+offer.ID, offer)
	}
	putJSON(ch, keyDB+id, d)
	c.putSeqLocked(ch)
	if err := ch.apply(c.be); err != nil {
		return nil, err // nothing of it is kept: the offer too
	}
	if offer != nil {
		c.mu.offers[offer.ID] = offer
	}
	c.mu.dbs[id] = d
	c.mu.colls[id] = map[string]*Container{}
	return d, nil
}

func (c *Catalog) newOfferLocked(tp Throughput, self, rid, db, coll string) *Offer {
	seq := c.nextLocked()
	return &Offer{
		ID: fmt.Sprintf("o%x", seq), Manual: tp.Manual, AutoscaleMax: tp.AutoscaleMax, Highest: max(tp.Manual, tp.AutoscaleMax),
		ResourceSelf: self, ResourceRID: rid, DB: db, Container: coll,
		TS: c.now().Unix(), ETag: document.ETag(seq),
	}
}

// DeleteDatabase removes database id with all its containers (their
// scripts and offers) and users (their permissions), atomically, and
// returns the containers: their data is the caller's to drop. It returns
// ErrNotFound, or ErrPrecondition when ifMatch ("" for none) names
// another etag.
func (c *Catalog) DeleteDatabase(id, ifMatch string) ([]*Container, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, ok := c.mu.dbs[id]
	if !ok {
		return nil, ErrNotFound
	}
	if document.IfMatchFails(ifMatch, d.ETag) {
		return nil, ErrPrecondition
	}
	ch := newChanges()
	var gone []*Container
	for _, k := range c.mu.colls[id] {
		if err := c.deleteContainerLocked(ch, k); err != nil {
			return nil, err
		}
		gone = append(gone, k)
	}
	for _, prefix := range []string{keyUser + dbKey(d) + "/", keyPerm + dbKey(d) + "/"} {
		if err := c.deletePrefixLocked(ch, prefix); err != nil {
			return nil, err
		}
	}
	if d.OfferID != "" {
		ch.delete(keyOffer + d.OfferID)
	}
	ch.delete(keyDB + id)
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	for _, k := range gone {
		delete(c.mu.offers, k.OfferID)
	}
	delete(c.mu.offers, d.OfferID)
	delete(c.mu.colls, id)
	delete(c.mu.dbs, id)
	return gone, nil
}

// deleteContainerLocked records in ch the deletion of container k's record,
// scripts, pending partition key deletes and offer. Its data is the
// engine's to drop (its keyspaces).
func (c *Catalog) deleteContainerLocked(ch *changes, k *Container) error {
	for _, prefix := range []string{scriptPrefix(k.Internal), pkDeletePrefix(k.Internal)} {
		if err := c.deletePrefixLocked(ch, prefix); err != nil {
			return err
		}
	}
	if k.OfferID != "" {
		ch.delete(keyOffer + k.OfferID)
	}
	ch.delete(collKey(k.DB, k.ID))
	return nil
}

// Container returns container id of database db. It returns ErrNotFound
// when either is missing.
func (c *Catalog) Container(db, id string) (*Container, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.mu.colls[db][id]
	if !ok {
		return nil, ErrNotFound
	}
	return k, nil
}

// Internals returns the internal id of every container, read at once (a
// container applied before its database, as a cluster's catalog may apply
// them, is among them).
func (c *Catalog) Internals() map[uint64]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[uint64]bool{}
	for _, m := range c.mu.colls {
		for _, k := range m {
			out[k.Internal] = true
		}
	}
	return out
}

// Containers returns database db's containers in creation order, or ErrNotFound.
func (c *Catalog) Containers(db string) ([]*Container, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.mu.colls[db]
	if !ok {
		return nil, ErrNotFound
	}
	out := make([]*Container, 0, len(m))
	for _, k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Container) int { return cmp.Compare(a.Internal, b.Internal) })
	return out, nil
}

// MaxSharingContainers is how many containers may share a database's
// throughput: Cosmos DB's limit since February 2020 (more containers need
// throughput of their own).
const MaxSharingContainers = 25

// CreateContainer creates a container in database db from its definition
// (the request body). It returns ErrNotFound (no database), ErrExists, or an
// *InvalidError naming what is wrong with the definition.
//
// Throughput: tp when given; otherwise the database's shared throughput;
// otherwise a 400 RU/s offer of its own (what the emulator does). The
// container starts with as many physical partitions as Cosmos DB would give
// it (partition.InitialRangeCount).
func (c *Catalog) CreateContainer(db string, body []byte, tp Throughput) (*Container, error) {
	def, err := parseDefinition(body, nil)
	if err != nil {
		return nil, err
	}
	if err := tp.validate(); err != nil {
		return nil, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, ok := c.mu.dbs[db]
	if !ok {
		return nil, ErrNotFound
	}
	if _, ok := c.mu.colls[db][def.id]; ok {
		return nil, ErrExists
	}
	seq := c.nextLocked()
	dbRID, _ := document.DecodeRID(d.RID)
	rid := binary.BigEndian.AppendUint32(dbRID, uint32(seq))
	k := &Container{
		DB: db, ID: def.id, RID: document.EncodeRID(rid), DBRID: d.RID,
		Internal: binary.BigEndian.Uint64(rid), PK: def.pk, Body: def.body,
		TS: c.now().Unix(), ETag: document.ETag(seq), RangesVersion: 1,
	}
	if def.pk.SystemKey {
		if err := systemKeyThroughput(tp); err != nil {
			return nil, err
		}
		if tp.IsZero() && d.OfferID != "" {
			return nil, invalid(fmt.Sprintf("database %s has shared throughput: a container in it needs a partition key", db))
		}
	}
	ch := newChanges()
	var offer *Offer
	n := 0
	switch {
	case !tp.IsZero() && def.pk.SystemKey:
		offer = c.newOfferLocked(tp, k.Self(), k.RID, db, k.ID)
		n = 1 // not elastic (MaxSystemKeyThroughput)
	case !tp.IsZero():
		offer = c.newOfferLocked(tp, k.Self(), k.RID, db, k.ID)
		n = partition.InitialRangeCount(tp.Manual, tp.AutoscaleMax)
	case d.OfferID != "":
		sharing := 0
		for _, ct := range c.mu.colls[db] {
			if ct.OfferID == "" {
				sharing++
			}
		}
		if sharing >= MaxSharingContainers {
			return nil, invalid(fmt.Sprintf("database %s already has %d containers sharing its throughput, the most Cosmos DB allows: "+
				"give the container throughput of its own", db, sharing))
		}
		// On the database's budgets: one per 10,000 RU/s of the most it was
		// provisioned with, not merged when it was lowered.
		shared := c.mu.offers[d.OfferID]
		n = partition.InitialRangeCount(0, shared.highest())
	default:
		offer = c.newOfferLocked(Throughput{Manual: 400}, k.Self(), k.RID, db, k.ID)
		n = 1
	}
	// Each range gets a keyspace of its own: new ids, so no leftover of
	// a deleted container can show up in them.
	for _, r := range partition.InitialLayout(def.pk, n) {
		ks, err := c.newKeyspaceLocked(ch)
		if err != nil {
			return nil, err
		}
		k.Ranges = append(k.Ranges, RangeRecord{ID: r.ID, Min: r.Min.String(), Max: r.Max.String(), Keyspace: ks})
	}
	k.RIDLimit = 1
	k.NextRangeID = n
	if err := k.derive(); err != nil {
		return nil, err
	}
	k.Indexed = k.policyRaw // a new container has no items, hence a complete index
	if offer != nil {
		k.OfferID = offer.ID
		putJSON(ch, keyOffer+offer.ID, offer)
	}
	putJSON(ch, collKey(db, k.ID), k)
	c.putSeqLocked(ch)
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	if offer != nil {
		c.mu.offers[offer.ID] = offer
	}
	c.mu.colls[db][k.ID] = k
	return k, nil
}

// ReplaceContainer replaces container id's definition with body. The
// partition key definition, the unique key policy and the conflict
// resolution policy cannot change
// (*InvalidError; an absent policy equals an empty one); body may omit the
// partition key's kind, version and systemKey, which keep their values. It
// returns ErrNotFound when the container does not exist, ErrPrecondition
// when ifMatch ("" for none) names another etag.
func (c *Catalog) ReplaceContainer(db, id string, body []byte, ifMatch string) (*Container, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok {
		return nil, ErrNotFound
	}
	if document.IfMatchFails(ifMatch, old.ETag) {
		return nil, ErrPrecondition
	}
	def, err := parseDefinition(body, &old.PK)
	if err != nil {
		return nil, err
	}
	if def.id != id {
		return nil, invalid(fmt.Sprintf("container id %q in the body does not match %q in the URL", def.id, id))
	}
	if !old.PK.Equal(def.pk) {
		return nil, invalid("the partition key definition of a container cannot be changed")
	}
	k := *old
	seq := c.nextLocked()
	k.Body, k.TS, k.ETag = def.body, c.now().Unix(), document.ETag(seq)
	if err := k.derive(); err != nil {
		return nil, err
	}
	if !k.unique.equal(old.unique) {
		return nil, invalid("the unique key policy of a container cannot be changed")
	}
	if conflictPolicyOf(k.Body) != conflictPolicyOf(old.Body) {
		// Cosmos DB: "Conflict resolution policy can only be specified at
		// container creation time and cannot be modified" (it was replaced,
		// silently; a bug hunt with azcosmos).
		return nil, invalid("the conflict resolution policy of a container can only be set when it is created and cannot be changed")
	}
	ch := newChanges()
	putJSON(ch, collKey(db, id), &k)
	c.putSeqLocked(ch)
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	c.mu.colls[db][id] = &k
	return &k, nil
}

// MarkIndexed records that the index entries of container db/id (the one
// with internal id internal, not a later one of the same name) reflect
// indexing policy policy (Container.PolicyJSON). It does nothing if the
// container is gone or its policy changed since.
func (c *Catalog) MarkIndexed(db, id string, internal uint64, policy string) error {
	unlock, err := c.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok || old.Internal != internal || old.policyRaw != policy || old.Indexed == policy {
		return nil
	}
	k := *old
	k.Indexed = policy
	return c.saveLocked(&k)
}

// SplitRange replaces physical partition rangeID of container db/id by two
// children, [min, at) and [at, max), with the next unused ids and the
// parent and its ancestors as parents, and the parent's keyspace (so a
// split moves no data); the pkranges version moves on. It is one atomic
// change: after a crash the container has either map. It returns
// ErrNotFound for an unknown container or range, an *InvalidError when
// at does not lie strictly inside the range, and ErrMoving while the range
// is being moved (BeginMove).
func (c *Catalog) SplitRange(db, id, rangeID string, at partition.EPK) (*Container, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok {
		return nil, ErrNotFound
	}
	parent, ok := old.pmap.ByID(rangeID)
	if !ok {
		return nil, ErrNotFound
	}
	if !parent.Contains(at) || bytes.Equal(at, parent.Min) {
		return nil, invalid(fmt.Sprintf("split point %s is not inside range %s [%s, %s)", at, rangeID, parent.Min, parent.Max))
	}
	i := slices.IndexFunc(old.Ranges, func(r RangeRecord) bool { return r.ID == rangeID })
	if old.Ranges[i].Moving != 0 {
		return nil, ErrMoving
	}
	k := *old
	k.Ranges = slices.Clone(old.Ranges)
	k.splitRecord(i, at.String())
	return c.saveSplitLocked(&k)
}

// SplitAt splits the physical partitions of container db/id at each of
// points that lies strictly inside one, as SplitRange would one after
// another (points in any order; those on a boundary already are skipped),
// in one atomic change. It returns the container and how many splits it
// made; ErrNotFound for an unknown container, ErrMoving (and nothing done)
// when a range to split is being moved.
func (c *Catalog) SplitAt(db, id string, points []partition.EPK) (*Container, int, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	old, ok := c.mu.colls[db][id]
	if !ok {
		return nil, 0, ErrNotFound
	}
	k := *old
	k.Ranges = slices.Clone(old.Ranges)
	n := 0
	for _, p := range points {
		// Upper-case hex orders as the bytes it encodes.
		at := p.String()
		i := slices.IndexFunc(k.Ranges, func(r RangeRecord) bool { return r.Min < at && at < r.Max })
		if i < 0 {
			continue
		}
		if k.Ranges[i].Moving != 0 {
			return nil, 0, ErrMoving
		}
		k.splitRecord(i, at)
		n++
	}
	if n == 0 {
		return old, 0, nil
	}
	out, err := c.saveSplitLocked(&k)
	return out, n, err
}

// splitRecord replaces k's range record i by its two children at at (hex),
// with the next unused ids; k.Ranges must be k's own.
func (k *Container) splitRecord(i int, at string) {
	r := k.Ranges[i]
	parents := append(slices.Clone(r.Parents), r.ID)
	lo := RangeRecord{ID: strconv.Itoa(k.NextRangeID), Min: r.Min, Max: at, Parents: parents, Keyspace: r.Keyspace, From: r.From, Cut: r.Cut}
	hi := RangeRecord{ID: strconv.Itoa(k.NextRangeID + 1), Min: at, Max: r.Max, Parents: parents, Keyspace: r.Keyspace, From: r.From, Cut: r.Cut}
	k.Ranges = slices.Insert(slices.Delete(k.Ranges, i, i+1), i, lo, hi)
	k.NextRangeID += 2
}

// saveSplitLocked saves k, whose ranges were split, with its pkranges
// version moved on.
func (c *Catalog) saveSplitLocked(k *Container) (*Container, error) {
	k.RangesVersion++
	if err := k.buildMap(); err != nil {
		return nil, err
	}
	if err := c.saveLocked(k); err != nil {
		return nil, err
	}
	return k, nil
}

// DeleteContainer removes a container with its scripts and offer,
// atomically, and returns it: its data is the caller's to drop. It returns
// ErrNotFound, or ErrPrecondition when ifMatch ("" for none) names
// another etag.
func (c *Catalog) DeleteContainer(db, id, ifMatch string) (*Container, error) {
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	k, ok := c.mu.colls[db][id]
	if !ok {
		return nil, ErrNotFound
	}
	if document.IfMatchFails(ifMatch, k.ETag) {
		return nil, ErrPrecondition
	}
	ch := newChanges()
	if err := c.deleteContainerLocked(ch, k); err != nil {
		return nil, err
	}
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	delete(c.mu.offers, k.OfferID)
	delete(c.mu.colls[db], id)
	return k, nil
}

// Offers returns all offers in creation order.
func (c *Catalog) Offers() []*Offer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Offer, 0, len(c.mu.offers))
	for _, o := range c.mu.offers {
		out = append(out, o)
	}
	// By id, "o" and the sequence number at creation in hexadecimal: by
	// length, then text. (By _etag they moved to the end when replaced.)
	slices.SortFunc(out, func(a, b *Offer) int { return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), cmp.Compare(a.ID, b.ID)) })
	return out
}

// Offer returns offer id (compared case-insensitively), or ErrNotFound.
func (c *Catalog) Offer(id string) (*Offer, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.mu.offers[strings.ToLower(id)]
	if !ok {
		return nil, ErrNotFound
	}
	return o, nil
}

// Least is the least throughput an offer can be set to, in each mode.
type Least struct {
	Manual       int    // RU/s
	AutoscaleMax int    // RU/s
	why          string // the terms, for an error's message
}

// MinThroughput is the least throughput offer o can be set to, as Cosmos
// DB computes it (the x-ms-cosmos-min-throughput of an offer read): manual
// throughput at least 400 RU/s, a hundredth of the most RU/s ever
// provisioned on the offer, and, for a database's shared offer, 400 RU/s
// plus 100 RU/s for each container past 25 that shares it (only a data
// directory made before MaxSharingContainers has such); an autoscale
// maximum at least 1,000 RU/s, a tenth of that most, and 1,000 RU/s more
// for each such container. Each is rounded up to its mode's step (100 and
// 1,000 RU/s). Cosmos DB's further term, 1 RU/s per GB stored (10 for an
// autoscale maximum), is not counted: a container's size is known only by
// reading the statistics of all its logical partitions.
func (c *Catalog) MinThroughput(o *Offer) Least {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.minThroughputLocked(o)
}

func (c *Catalog) minThroughputLocked(o *Offer) Least {
	h := o.highest()
	l := Least{Manual: max(400, roundUp(h/100, 100)), AutoscaleMax: max(1000, roundUp(h/10, 1000))}
	l.why = fmt.Sprintf("the most ever provisioned on it was %d RU/s", h)
	if o.Container == "" {
		shared := 0
		for _, ct := range c.mu.colls[o.DB] {
			if ct.OfferID == "" {
				shared++
			}
		}
		past := max(shared-25, 0)
		l.Manual, l.AutoscaleMax = max(l.Manual, 400+100*past), max(l.AutoscaleMax, 1000+1000*past)
		l.why += fmt.Sprintf(", and %d containers share it", shared)
	}
	return l
}

// roundUp rounds n up to a multiple of step.
func roundUp(n, step int) int { return (n + step - 1) / step * step }

// ReplaceOffer sets offer id's throughput. It returns ErrNotFound or an
// *InvalidError. Splitting partitions when throughput outgrows them is the
// throughput layer's job. ErrPrecondition when ifMatch ("" for none) names
// another etag. A change between manual and autoscale is a migration, made
// only when migrate says the request asked for one (Cosmos DB's
// x-ms-cosmos-migrate-offer-to-… headers, which the SDKs do not send: they
// get Cosmos DB's 400).
func (c *Catalog) ReplaceOffer(id string, tp Throughput, ifMatch string, migrate Migration) (*Offer, error) {
	if tp.IsZero() {
		return nil, invalid("offer content must set offerThroughput or offerAutopilotSettings.maxThroughput")
	}
	if err := tp.validate(); err != nil {
		return nil, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, ok := c.mu.offers[strings.ToLower(id)]
	if !ok {
		return nil, ErrNotFound
	}
	if document.IfMatchFails(ifMatch, old.ETag) {
		return nil, ErrPrecondition
	}
	if k := c.mu.colls[old.DB][old.Container]; old.Container != "" && k != nil && k.PK.SystemKey {
		if err := systemKeyThroughput(tp); err != nil {
			return nil, err
		}
	}
	// A migration as Cosmos DB's Data Explorer and the .NET SDK make it
	// (a throughput hunt): to autoscale, the manual offer sent as it is,
	// the service choosing the maximum (the current RU/s as a multiple of
	// 1,000, at least autoscale's least); to manual, the throughput wanted
	// (the API drops the autopilot settings sent beside it), or, with none,
	// the autoscale maximum.
	switch {
	case migrate == ToAutoscale && old.AutoscaleMax == 0 && tp.AutoscaleMax == 0:
		tp = Throughput{AutoscaleMax: max(roundUp(old.Manual, 1000), c.minThroughputLocked(old).AutoscaleMax)}
	case migrate == ToManual && old.AutoscaleMax != 0 && tp.Manual == 0:
		tp = Throughput{Manual: old.AutoscaleMax}
	}
	switch {
	case old.AutoscaleMax == 0 && tp.AutoscaleMax != 0 && migrate != ToAutoscale:
		return nil, invalid("x-ms-cosmos-migrate-offer-to-autopilot must be supplied and offercontent must contain autopilotSettings for migration from manual throughput to autopilot.")
	case old.AutoscaleMax != 0 && tp.AutoscaleMax == 0 && migrate != ToManual:
		return nil, invalid("x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied and offercontent must contain autopilotSettings for migration from autopilot to manual throughput.")
	}
	if least := c.minThroughputLocked(old); tp.Manual != 0 && tp.Manual < least.Manual {
		return nil, invalid(fmt.Sprintf("throughput %d RU/s is below this offer's minimum, %d RU/s (%s)", tp.Manual, least.Manual, least.why))
	} else if tp.AutoscaleMax != 0 && tp.AutoscaleMax < least.AutoscaleMax {
		return nil, invalid(fmt.Sprintf("autoscale max throughput %d RU/s is below this offer's minimum, %d RU/s (%s)", tp.AutoscaleMax, least.AutoscaleMax, least.why))
	}
	o := *old
	seq := c.nextLocked()
	o.Highest = max(old.highest(), tp.Manual, tp.AutoscaleMax)
	o.Manual, o.AutoscaleMax, o.TS, o.ETag = tp.Manual, tp.AutoscaleMax, c.now().Unix(), document.ETag(seq)
	ch := newChanges()
	putJSON(ch, keyOffer+o.ID, &o)
	c.putSeqLocked(ch)
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	c.mu.offers[o.ID] = &o
	return &o, nil
}

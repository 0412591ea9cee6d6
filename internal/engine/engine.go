package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/script"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Config configures the engine.
type Config struct {
	// MaxItemBytes is the largest item body accepted, in bytes. Default 2 MiB,
	// Cosmos DB's limit.
	MaxItemBytes int
	// DefaultPageSize is the page size of feeds and queries when the client
	// sends no x-ms-max-item-count. Default 100.
	DefaultPageSize int
	// MaxPageBytes bounds one page's payload when the client asks for an
	// unbounded page (-1). Default 4 MiB.
	MaxPageBytes int
	// GatewayQueryFull makes the server execute every cross-partition query
	// itself instead of refusing, as Cosmos DB's gateway does, the ones that
	// need cross-partition merging (ORDER BY, aggregates, ...). Default false.
	GatewayQueryFull bool
	// LenientIDs accepts item ids containing '/', '\\', '?' or '#' on
	// create, as the Cosmos DB emulator does, although no client can address
	// them afterwards. Default false: such ids get 400.
	LenientIDs bool
	// QueryPageTime bounds the time one page of a query may take: a query
	// still running then returns what it has (possibly nothing) with a
	// continuation. Default 5 s, as Cosmos DB.
	QueryPageTime time.Duration
	// QueryMaxTime bounds a query page that must read its whole scope
	// (ORDER BY without an ordered index, GROUP BY, aggregates, DISTINCT):
	// past it the query fails with 408. Default 10 s: such a page cannot
	// stop early with a continuation, so it fails fast instead.
	QueryMaxTime time.Duration
	// QueryMaxSortBytes bounds the documents an ORDER BY without TOP or
	// LIMIT may buffer to sort: past it the query fails with 400. Default
	// 256 MiB.
	QueryMaxSortBytes int
	// QueryMemoBytes bounds the rows of queries evaluated whole, and the
	// index entries gathered, that the engine keeps for their next pages
	// (queryMemo). Default 64 MiB; negative: none kept.
	QueryMemoBytes int
	// QueryWorkers bounds how many physical partitions one query reads and
	// folds at once, for GROUP BY and aggregates over several partitions.
	// Default GOMAXPROCS.
	QueryWorkers int
	// PartitionMaxBytes is the item bytes past which a physical partition
	// splits (checked by Run every SplitCheckInterval). Default 50 GiB, as
	// Cosmos DB.
	PartitionMaxBytes int64
	// PartitionMaxRU is the most RU/s one physical partition serves: raising
	// a container's throughput past partitions × PartitionMaxRU splits
	// partitions. Default 10,000, as Cosmos DB.
	PartitionMaxRU int
	// TTLPurgeInterval is how often Run deletes expired items (reading at
	// most 10,000 items of each container with a time to live per pass).
	// Default 5s.
	TTLPurgeInterval time.Duration
	// SplitCheckInterval is how often Run looks for partitions to split.
	// Default 1 s.
	SplitCheckInterval time.Duration
	// LogicalPartitionMaxBytes caps the item bytes one logical partition
	// may hold: a write past it gets 403/1014. Default 20 GiB, as Cosmos DB.
	LogicalPartitionMaxBytes int64
	// RateLimit enforces provisioned throughput per physical partition:
	// requests past a partition's budget get 429. Default false.
	RateLimit bool
	// Budgets, in a cluster, shares each physical partition's budget
	// between the nodes (RateLimit): the request units this node charges
	// to a partition it does not lead are reported to the leader, whose
	// bucket is the partition's, and the leader's word that the budget is
	// spent refuses requests here too. Nil: every node meters alone.
	Budgets SharedBudgets
	// BurstCapacity lets a partition bank up to 5 minutes of unused budget
	// and spend it at up to 3,000 RU/s when its bucket is empty, as Cosmos
	// DB's (opt-in) burst capacity. Default false.
	BurstCapacity bool
	// LoadSplits splits a partition that throttles for several split checks
	// in a row: where its request units halve, or around one logical
	// partition that takes most of them (beyond Cosmos DB). Default false.
	LoadSplits bool
	// AdaptiveCapacity lets a partition out of budget borrow its
	// container's other partitions' unused budget, up to PartitionMaxRU
	// RU/s (beyond Cosmos DB, as DynamoDB). Default false.
	AdaptiveCapacity bool
	// ScriptLimits bound each stored procedure, trigger and UDF run; zero
	// fields take the script package's defaults (5 s, 1000 operations).
	ScriptLimits script.Limits
	// ScriptSlots bounds the stored procedures executing at once; others
	// wait in arrival order for up to their time limit, then get 429.
	// Default half the processors, at least 1.
	ScriptSlots int
	// QuerySlots bounds the query pages reading and evaluating documents at
	// once; pages take turns of a few milliseconds. Default half the
	// processors, at least 1.
	QuerySlots int
	// Replicated runs the engine over replicated keyspaces and a catalog
	// other nodes share (docs/cluster.md): the work a single node does on
	// the keyspaces when the catalog changes runs in the background on
	// each keyspace's leader (cluster.go), and partitions are not
	// separated into keyspaces of their own. Default false.
	Replicated bool
	// PKDeleteSyncItems is how many items a partition key delete deletes
	// before it answers; Run deletes the rest of a larger logical partition
	// in the background (hidden from reads meanwhile). Default 1000.
	PKDeleteSyncItems int
}

func (c Config) withDefaults() Config {
	if c.MaxItemBytes <= 0 {
		c.MaxItemBytes = 2 << 20
	}
	if c.DefaultPageSize <= 0 {
		c.DefaultPageSize = 100
	}
	if c.MaxPageBytes <= 0 {
		c.MaxPageBytes = 4 << 20
	}
	if c.QueryPageTime <= 0 {
		c.QueryPageTime = 5 * time.Second
	}
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = 50 << 30
	}
	if c.PartitionMaxRU <= 0 {
		c.PartitionMaxRU = 10000
	}
	if c.SplitCheckInterval <= 0 {
		c.SplitCheckInterval = time.Second
	}
	if c.TTLPurgeInterval <= 0 {
		c.TTLPurgeInterval = 5 * time.Second
	}
	if c.LogicalPartitionMaxBytes <= 0 {
		c.LogicalPartitionMaxBytes = 20 << 30
	}
	if c.QueryWorkers <= 0 {
		c.QueryWorkers = runtime.GOMAXPROCS(0)
	}
	if c.QueryMaxTime <= 0 {
		c.QueryMaxTime = 10 * time.Second
	}
	if c.ScriptSlots <= 0 {
		c.ScriptSlots = defaultSlots()
	}
	if c.QuerySlots <= 0 {
		c.QuerySlots = defaultSlots()
	}
	if c.QueryMaxSortBytes <= 0 {
		c.QueryMaxSortBytes = 256 << 20
	}
	if c.QueryMemoBytes == 0 {
		c.QueryMemoBytes = 64 << 20
	}
	if c.PKDeleteSyncItems <= 0 {
		c.PKDeleteSyncItems = 1000
	}
	return c
}

// Engine serves the data-plane and metadata operations. It is safe for
// concurrent use.
type Engine struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
	// bucketRound is the most entries of a bounded index term an ordered
	// read sorts at a time (readBucket); 0: maxBucketRound. Tests lower it.
	bucketRound int
	// host holds the physical partitions' data, one keyspace each (shared
	// by split siblings): the engine reaches it only through package
	// replica (docs/storage-seams.md).
	host  replica.Host
	cat   *catalog.Catalog
	rids  ridAllocator
	locks lockTable
	// colls: item transactions hold their container's shared, work that
	// must see no writes (an index rebuild, a separation's cut-over)
	// exclusively. maps: reads hold it shared from resolving a container's
	// ranges to keyspaces until they are done, a separation's cut-over
	// exclusively, so no read uses a mapping whose data is being collected.
	colls, maps containerLocks
	// separating serializes separations (separate.go) on this node.
	separating sync.Mutex
	limit      *throughput.Limiter // nil: no rate limiting
	grown      grown               // containers to check for splits
	sizes      rangeSizes          // ranges' size estimates, so the split check scans few
	hot        hotKeys             // request units per logical partition, per range
	progs      programs
	qcache     queryCache // parsed queries and compiled programs
	memo       queryMemo  // evaluations of queries run whole, for their next pages
	// computedProps: containers' parsed computed properties (computed.go).
	computedProps computedCache
	// collectRetry spaces a separated range's failed leftover collections.
	collectRetry backoffs
	// reindex holds the progress of each running index rebuild
	// (rebuildTerms), by container Internal id: uint64 → *reindexProgress.
	reindex sync.Map
	// scripts and queries bound the heavy work running at once (gate).
	scripts, queries *gate
	// docMem bounds the memory writes take to index documents (docmem.go).
	docMem *semaphore.Weighted
	// pkdel holds the pending partition key deletes (pkdelete.go).
	pkdel pkDeletes
	// reconcileWake wakes a replicated engine's reconciliation (cluster.go).
	reconcileWake chan struct{}
	// prefetches passes the containers to reserve _rid blocks for from
	// reconciliation to the prefetcher (prefetchRIDs).
	prefetches chan []*catalog.Container
}

// New returns an engine over the keyspaces of host, with its catalog
// persisted in meta. now supplies timestamps (nil: time.Now); log nil
// discards.
func New(ctx context.Context, host replica.Host, meta catalog.Backend, cfg Config, now func() time.Time, log *slog.Logger) (*Engine, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cat, err := catalog.Open(ctx, meta, now)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg.withDefaults(), log: log, now: now, host: host, cat: cat}
	e.hot.now = now
	e.rids.cat = cat
	e.scripts, e.queries = newGate(e.cfg.ScriptSlots), newGate(e.cfg.QuerySlots)
	e.docMem = newDocMemory()
	e.memo.budget = e.cfg.QueryMemoBytes
	e.pkdel.wake = make(chan struct{}, 1)
	e.reconcileWake = make(chan struct{}, 1)
	e.prefetches = make(chan []*catalog.Container, 1)
	if cfg.RateLimit {
		var burst throughput.Burst
		if cfg.BurstCapacity {
			burst = throughput.Burst{Window: 5 * time.Minute, MaxRate: 3000, Below: 3000}
		}
		e.limit = throughput.NewLimiter(now, burst)
	}
	if err := e.dropOrphans(ctx); err != nil {
		return nil, err
	}
	if err := e.ensureIndexes(ctx); err != nil {
		return nil, err
	}
	if err := e.loadPKDeletes(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// catalogSyncWait bounds how long a lookup that misses waits for a shared
// catalog to catch up with changes other nodes made.
const catalogSyncWait = 2 * time.Second

// syncedAfterMiss reports whether err is a catalog miss after which the
// catalog, shared with other nodes, has synced: the lookup is worth
// repeating.
func (e *Engine) syncedAfterMiss(err error) bool {
	if !errors.Is(err, catalog.ErrNotFound) || !e.cat.Shared() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), catalogSyncWait)
	defer cancel()
	return e.cat.Sync(ctx) == nil
}

// container returns the catalog entry of db/coll, or a 404. With a catalog
// other nodes share, a miss first waits until this node has followed every
// change made before it (Catalog.Sync): a container created through
// another node a moment ago is found here too.
func (e *Engine) container(db, coll string) (*catalog.Container, error) {
	c, err := e.cat.Container(db, coll)
	if e.syncedAfterMiss(err) {
		c, err = e.cat.Container(db, coll)
	}
	if errors.Is(err, catalog.ErrNotFound) {
		if _, dbErr := e.cat.Database(db); dbErr != nil {
			return nil, translate(fmt.Errorf("database %s: %w", db, err))
		}
	}
	return c, translate(err)
}

// owner is container for a request on one of the container's children (an
// item, a batch, a query, a script, a conflict, a partition key range, the
// change feed): a miss is Cosmos DB's 404/1003, "owner resource does not
// exist", which tells a client that the container (or its database) is
// missing rather than the item it asked for.
func (e *Engine) owner(db, coll string) (*catalog.Container, error) {
	c, err := e.container(db, coll)
	if se, ok := errors.AsType[*status.Error](err); ok && se.Code == http.StatusNotFound && se.Sub == status.SubNone {
		return nil, status.Newf(http.StatusNotFound, "Owner resource does not exist: the container dbs/%s/colls/%s was not found", db, coll).
			WithSub(status.SubNotFoundOwnerResource).Wrap(err)
	}
	return c, err
}

// Throughput is provisioned throughput as a client requests it (manual
// RU/s or an autoscale maximum); see catalog.Throughput.
type Throughput = catalog.Throughput

// Migration is the change of throughput mode a replace of an offer asks
// for (catalog.Migration).
type Migration = catalog.Migration

// The migrations of ReplaceOffer.
const (
	NoMigration = catalog.NoMigration
	ToAutoscale = catalog.ToAutoscale
	ToManual    = catalog.ToManual
)

// Resource is a metadata resource as the API returns it.
type Resource struct {
	Body []byte // the resource's JSON
	ETag string
}

// CreateDatabase creates a database, with shared throughput when tp is set.
// Errors: 409 when it exists, 400 for an invalid id or throughput.
func (e *Engine) CreateDatabase(id string, tp Throughput) (Resource, error) {
	d, err := e.cat.CreateDatabase(id, tp)
	if err != nil {
		return Resource{}, translate(err)
	}
	return Resource{Body: d.JSON(), ETag: d.ETag}, nil
}

// ReadDatabase returns a database, or 404.
func (e *Engine) ReadDatabase(id string) (Resource, error) {
	d, err := e.cat.Database(id)
	if e.syncedAfterMiss(err) {
		d, err = e.cat.Database(id)
	}
	if err != nil {
		return Resource{}, translate(err)
	}
	return Resource{Body: d.JSON(), ETag: d.ETag}, nil
}

// DeleteDatabase deletes a database with all its containers and items, or 404.
func (e *Engine) DeleteDatabase(id, ifMatch string) error {
	gone, err := e.cat.DeleteDatabase(id, ifMatch)
	if err != nil {
		return translate(err)
	}
	for _, c := range gone {
		e.dropData(c)
	}
	return nil
}

// Databases returns every database resource, in creation order.
func (e *Engine) Databases() [][]byte {
	var out [][]byte
	for _, d := range e.cat.Databases() {
		out = append(out, d.JSON())
	}
	return out
}

// DatabaseRID returns database id's _rid, or 404.
func (e *Engine) DatabaseRID(id string) (string, error) {
	d, err := e.cat.Database(id)
	if e.syncedAfterMiss(err) {
		d, err = e.cat.Database(id)
	}
	if err != nil {
		return "", translate(err)
	}
	return d.RID, nil
}

// CreateContainer creates a container from its definition. Errors: 404 (no
// database), 409, 400 for an invalid definition or throughput.
func (e *Engine) CreateContainer(db string, body []byte, tp Throughput) (Resource, error) {
	if _, err := parseComputed(body); err != nil {
		return Resource{}, err
	}
	c, err := e.cat.CreateContainer(db, body, tp)
	if err != nil {
		return Resource{}, translate(err)
	}
	if !e.cfg.Replicated { // replicated: the keyspaces' leaders do it (reconcile)
		if err := e.initKeyspaces(c); err != nil {
			return Resource{}, translate(err)
		}
	} else {
		e.Reconcile()
		e.awaitLeaders(c)
	}
	if c.OfferID == "" {
		// Laid out for the database's budgets already, unless
		// PartitionMaxRU is not Cosmos DB's 10,000.
		e.alignContainer(context.Background(), db, c.ID)
	}
	e.log.Info("container created", "db", db, "container", c.ID, "ranges", len(c.Ranges))
	return Resource{Body: c.JSON(), ETag: c.ETag}, nil
}

// ReadContainer returns a container, or 404.
func (e *Engine) ReadContainer(db, id string) (Resource, error) {
	c, err := e.container(db, id)
	if err != nil {
		return Resource{}, err
	}
	return Resource{Body: c.JSON(), ETag: c.ETag}, nil
}

// ReplaceContainer replaces a container's definition (not its partition key).
func (e *Engine) ReplaceContainer(db, id string, body []byte, ifMatch string) (Resource, error) {
	if _, err := parseComputed(body); err != nil {
		return Resource{}, err
	}
	c, err := e.container(db, id)
	if err != nil {
		return Resource{}, err
	}
	if ifMatchFails(ifMatch, c.ETag) { // checked again under the catalog's lock
		return Resource{}, status.PreconditionFailed()
	}
	// A changed indexing policy rebuilds the container's index before the
	// reply, with its writes held off (Cosmos DB transforms the index in
	// the background; here the replace waits for it).
	defer e.colls.exclusive(c.Internal)()
	c, err = e.cat.ReplaceContainer(db, id, body, ifMatch)
	if err != nil {
		return Resource{}, translate(err)
	}
	if !c.IndexCurrent() && e.cfg.Replicated {
		// Each keyspace's leader rebuilds its index in the background
		// (reconcile), as Cosmos DB transforms an index; the container
		// reports the transformation's progress meanwhile.
		e.Reconcile()
	} else if !c.IndexCurrent() {
		if err := e.rebuildTerms(context.Background(), c); err != nil {
			return Resource{}, translate(err)
		}
	}
	return Resource{Body: c.JSON(), ETag: c.ETag}, nil
}

// DeleteContainer deletes a container and its items, or 404.
func (e *Engine) DeleteContainer(db, id, ifMatch string) error {
	if _, err := e.container(db, id); err != nil {
		return err
	}
	c, err := e.cat.DeleteContainer(db, id, ifMatch)
	if err != nil {
		return translate(err)
	}
	e.dropData(c)
	return nil
}

// Containers returns database db's container resources, or 404.
func (e *Engine) Containers(db string) ([][]byte, error) {
	cs, err := e.cat.Containers(db)
	if err != nil {
		return nil, translate(err)
	}
	var out [][]byte
	for _, c := range cs {
		out = append(out, c.JSON())
	}
	return out, nil
}

// ContainerRID returns the container's _rid (for x-ms-content-path and
// feed envelopes), or 404.
func (e *Engine) ContainerRID(db, coll string) (string, error) {
	c, err := e.container(db, coll)
	if err != nil {
		return "", err
	}
	return c.RID, nil
}

// PKRange is one physical partition as the pkranges feed shows it.
type PKRange struct {
	ID       string
	RID      string
	Min, Max string // EPK hex
	Parents  []string
	Fraction float64 // share of the container's throughput
}

// PKRanges returns the container's current physical partitions, the map's
// version (the feed's etag) and the container's _rid and _self.
func (e *Engine) PKRanges(db, coll string) (ranges []PKRange, version int, c *catalog.Container, err error) {
	c, err = e.owner(db, coll)
	if err != nil {
		return nil, 0, nil, err
	}
	rs := c.Map().Ranges()
	for i, r := range rs {
		ranges = append(ranges, PKRange{
			ID: r.ID, RID: pkRangeRID(c, i), Min: r.Min.String(), Max: r.Max.String(),
			Parents: r.Parents, Fraction: 1 / float64(len(rs)),
		})
	}
	return ranges, c.RangesVersion, c, nil
}

// Offers returns every offer resource.
func (e *Engine) Offers() [][]byte {
	var out [][]byte
	for _, o := range e.cat.Offers() {
		out = append(out, o.JSON())
	}
	return out
}

// OfferResource is an offer and the least manual throughput, in RU/s, it
// can be set to (the x-ms-cosmos-min-throughput of its reads; an autoscale
// maximum has a least of its own: catalog.MinThroughput).
type OfferResource struct {
	Resource
	MinThroughput int
}

// ReadOffer returns offer id, or 404.
func (e *Engine) ReadOffer(id string) (OfferResource, error) {
	o, err := e.cat.Offer(id)
	if err != nil {
		return OfferResource{}, translate(err)
	}
	return e.offerResource(o), nil
}

func (e *Engine) offerResource(o *catalog.Offer) OfferResource {
	return OfferResource{Resource{Body: o.JSON(), ETag: o.ETag}, e.cat.MinThroughput(o).Manual}
}

// ReplaceOffer sets offer id's throughput. Errors: 404, 400 for invalid
// throughput.
//
// Raising a container's throughput past its partitions × PartitionMaxRU
// splits partitions until each serves at most that; raising a database's
// splits its sharing containers' partitions at the boundaries of its
// budgets (alignShared).
func (e *Engine) ReplaceOffer(id string, tp Throughput, ifMatch string, migrate Migration) (OfferResource, error) {
	o, err := e.cat.ReplaceOffer(id, tp, ifMatch, migrate)
	if err != nil {
		return OfferResource{}, translate(err)
	}
	if o.Container != "" {
		if err := e.splitForThroughput(context.Background(), o.DB, o.Container, o.MaxThroughput()); err != nil {
			return OfferResource{}, err
		}
	} else {
		e.alignShared(context.Background(), o.DB)
	}
	return e.offerResource(o), nil
}

package engine

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
)

// Budgets (docs/request-units.md, "Provisioned throughput"). A physical
// partition of a container with throughput of its own draws on a budget of
// its own: the container's RU/s ÷ its partitions. The containers sharing
// a database's throughput draw on the database's budgets, as in Cosmos DB,
// where they live on the database's physical partitions: the database has
// ⌈peak RU/s ÷ PartitionMaxRU⌉ budgets (the peak: the most it was ever
// provisioned with), each of an equal share of its RU/s, one for each
// slice of the hash space of that many of equal width
// (partition.Definition.Slice), and a sharing container's partition draws
// on the budget of the slice it starts in. Its partitions are split at the
// slices' boundaries (alignShared), so each lies in one slice. One busy
// container may so use all of the database's throughput while the others
// idle, and no budget exceeds PartitionMaxRU.

// budget is the token bucket a physical partition draws on.
type budget struct {
	key  string  // the limiter's bucket
	rate float64 // RU/s; 0: unlimited
	// shared: the database's budget (slice of n) a sharing container's
	// partition draws on; n is 0 for a partition's own budget.
	db       *catalog.Database
	slice, n int
}

// budgetOf returns the budget physical partition r of c draws on.
func (e *Engine) budgetOf(c *catalog.Container, r partition.Range) budget {
	if c.OfferID != "" {
		b := budget{key: rangeKey(c, r)}
		if o, err := e.cat.Offer(c.OfferID); err == nil {
			b.rate = float64(o.MaxThroughput()) / float64(max(1, c.Map().Len()))
		}
		return b
	}
	d, err := e.cat.Database(c.DB)
	if err != nil || d.OfferID == "" {
		return budget{key: rangeKey(c, r)}
	}
	o, err := e.cat.Offer(d.OfferID)
	if err != nil {
		return budget{key: rangeKey(c, r)}
	}
	n := e.sharedBudgets(o)
	s := c.PK.Slice(n, r.Min)
	return budget{key: sharedBudgetKey(d, s), rate: float64(o.MaxThroughput()) / float64(n), db: d, slice: s, n: n}
}

// sharedBudgets is how many budgets a database's shared offer o has: one
// for each PartitionMaxRU of the most it was ever provisioned with. As
// Cosmos DB's physical partitions, they are not merged when the throughput
// is lowered: it is spread over them.
func (e *Engine) sharedBudgets(o *catalog.Offer) int {
	return max(1, (o.Peak()+e.cfg.PartitionMaxRU-1)/e.cfg.PartitionMaxRU)
}

// sharedBudgetPrefix starts the limiter key of a database's budget; a
// partition's own key starts with its container's internal id in hex
// (rangeKey), which no "s" begins.
const sharedBudgetPrefix = "shared/"

// sharedBudgetKey is the limiter key of database d's budget s:
// "shared/<s>/<the database's _rid>".
func sharedBudgetKey(d *catalog.Database, s int) string {
	return sharedBudgetPrefix + strconv.Itoa(s) + "/" + d.RID
}

// parseSharedBudgetKey returns the database _rid and slice of a
// sharedBudgetKey.
func parseSharedBudgetKey(key string) (rid string, slice int, ok bool) {
	rest, ok := strings.CutPrefix(key, sharedBudgetPrefix)
	if !ok {
		return "", 0, false
	}
	s, rid, ok := strings.Cut(rest, "/")
	if !ok {
		return "", 0, false
	}
	slice, err := strconv.Atoi(s)
	if err != nil || slice < 0 {
		return "", 0, false
	}
	return rid, slice, true
}

// siblings returns the budgets adaptive capacity may borrow from for b, a
// budget of c: its container's partitions' (a partition's own), or its
// database's (a shared one).
func (e *Engine) siblings(c *catalog.Container, b budget) []string {
	var out []string
	if b.n > 0 {
		for s := range b.n {
			out = append(out, sharedBudgetKey(b.db, s))
		}
		return out
	}
	for _, r := range c.Map().Ranges() {
		out = append(out, rangeKey(c, r))
	}
	return out
}

// budgetLeader returns the node that keeps budget b, which partition r of
// c draws on, when another node does: 0 when this node keeps it, or no
// keeper is known (cluster.Budgets: charges are reported to the keeper). A
// partition's own budget is kept by its keyspace's leader; a database's
// budget s by the leader of the partition holding the start of slice s in
// the first container (by internal id) that shares the database's
// throughput — a choice every node makes alike from the catalog.
func (e *Engine) budgetLeader(c *catalog.Container, r partition.Range, b budget) uint64 {
	if b.n == 0 {
		return e.leaderOf(c, r)
	}
	colls, err := e.cat.Containers(c.DB)
	if err != nil {
		return e.leaderOf(c, r)
	}
	for _, k := range colls {
		if k.OfferID != "" {
			continue
		}
		if at := k.PK.SliceStart(b.n, b.slice); at != nil {
			return e.leaderOf(k, k.Map().Locate(at))
		}
		break
	}
	return e.leaderOf(c, r)
}

// rateOfKey returns the rate of the budget a limiter key names (a
// rangeKey or a sharedBudgetKey), and false when no container or database
// known here has it.
func (e *Engine) rateOfKey(key string) (float64, bool) {
	if rid, s, ok := parseSharedBudgetKey(key); ok {
		for _, d := range e.cat.Databases() {
			if d.RID != rid || d.OfferID == "" {
				continue
			}
			o, err := e.cat.Offer(d.OfferID)
			if err != nil {
				return 0, false
			}
			if n := e.sharedBudgets(o); s < n {
				return float64(o.MaxThroughput()) / float64(n), true
			}
			return 0, false
		}
		return 0, false
	}
	hex, id, ok := strings.Cut(key, "/")
	if !ok {
		return 0, false
	}
	internal, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, false
	}
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue
		}
		for _, c := range colls {
			if c.Internal != internal {
				continue
			}
			r, ok := c.Map().ByID(id)
			if !ok {
				return 0, false
			}
			return e.budgetOf(c, r).rate, true
		}
	}
	return 0, false
}

// alignShared splits the partitions of database db's containers that share
// its throughput at the boundaries of its budgets' slices, so that each
// partition draws on one budget, as Cosmos DB splits a database's physical
// partitions when its throughput grows past what they serve. It does what
// it can: a container deleted meanwhile is skipped, and one that fails to
// split is logged and left to checkAlignment, which finishes the work in
// the background (as after a crash, or on a data directory from before
// the budgets).
func (e *Engine) alignShared(ctx context.Context, db string) {
	colls, err := e.cat.Containers(db)
	if err != nil {
		return
	}
	for _, c := range colls {
		if c.OfferID == "" {
			e.alignContainer(ctx, db, c.ID)
		}
	}
}

// alignContainer splits container db/coll, which shares its database's
// throughput, at the boundaries of the database's budgets' slices, in one
// catalog change (catalog.SplitAt: a raise to 1,000,000 RU/s is 99 splits
// of each container, each of which, made alone, rewrote the container's
// ranges); a failure is logged (checkAlignment tries again).
func (e *Engine) alignContainer(ctx context.Context, db, coll string) {
	start := time.Now()
	for {
		c, err := e.container(db, coll)
		if err != nil {
			return // deleted meanwhile
		}
		points := e.misaligned(c)
		if len(points) == 0 {
			return
		}
		k, n, err := e.cat.SplitAt(db, coll, points)
		if errors.Is(err, catalog.ErrMoving) && time.Since(start) < moveWait {
			// A separation holds a range for a moment (its copy).
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if errors.Is(err, catalog.ErrNotFound) {
			return // deleted meanwhile
		}
		if err != nil {
			e.log.Warn("splitting a container for its database's throughput budgets", "db", db, "container", coll, "err", err)
			return
		}
		for _, r := range c.Map().Ranges() {
			if _, ok := k.Map().ByID(r.ID); !ok {
				e.forgetRange(c, r)
			}
		}
		e.log.Info("partitions split for the database's throughput budgets", "db", db, "container", coll, "splits", n, "ranges", k.Map().Len())
		return
	}
}

// misaligned returns the boundaries of its database's budgets' slices that
// one of c's partitions spans (none when c does not share its database's
// throughput).
func (e *Engine) misaligned(c *catalog.Container) []partition.EPK {
	if c.OfferID != "" {
		return nil
	}
	b := e.budgetOf(c, c.Map().Ranges()[0])
	var out []partition.EPK
	for s := 1; s < b.n; s++ {
		at := c.PK.SliceStart(b.n, s)
		if r := c.Map().Locate(at); !bytes.Equal(r.Min, at) {
			out = append(out, at)
		}
	}
	return out
}

// checkAlignment aligns the sharing containers whose partitions span a
// boundary of their database's budgets (alignShared did not finish: a
// crash, a failed split, a data directory from before the budgets, a
// changed PartitionMaxRU). In a cluster a container is aligned by the node
// that leads its first partition's keyspace, so that one node splits it.
func (e *Engine) checkAlignment(ctx context.Context) {
	for _, d := range e.cat.Databases() {
		if d.OfferID == "" {
			continue
		}
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue
		}
		for _, c := range colls {
			if len(e.misaligned(c)) == 0 {
				continue
			}
			if e.cfg.Replicated {
				rep, err := e.replicaOf(c, c.Map().Ranges()[0])
				if err != nil || rep.Lead() != nil {
					continue
				}
			}
			e.alignContainer(ctx, c.DB, c.ID)
		}
	}
}

// checkThroughput finishes the splits of containers whose own throughput
// needs more physical partitions than they have (PartitionMaxRU each):
// ReplaceOffer records the throughput before it splits, so a crash in
// between left a container at 500,000 RU/s with 3 partitions for good (a
// crash hunt: nothing split it again but the same replace sent again). In
// a cluster a container is split by the node that leads its first
// partition's keyspace. tried remembers, per container, the partitions it
// had when an attempt left it short (a range that cannot be halved), so
// that the attempt is not repeated, and logged, every check.
func (e *Engine) checkThroughput(ctx context.Context, tried map[uint64]int) {
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue
		}
		for _, c := range colls {
			if c.OfferID == "" {
				continue
			}
			o, err := e.cat.Offer(c.OfferID)
			if err != nil {
				continue
			}
			n := c.Map().Len()
			if n >= (o.MaxThroughput()+e.cfg.PartitionMaxRU-1)/e.cfg.PartitionMaxRU || tried[c.Internal] == n {
				continue
			}
			if e.cfg.Replicated {
				rep, err := e.replicaOf(c, c.Map().Ranges()[0])
				if err != nil || rep.Lead() != nil {
					continue
				}
			}
			tried[c.Internal] = n
			if err := e.splitForThroughput(ctx, c.DB, c.ID, o.MaxThroughput()); err != nil && !storeRefused(err) {
				e.log.Warn("splitting a container for its throughput", "db", c.DB, "container", c.ID, "err", err)
			}
		}
	}
}

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
)

// The consistency checker (docs/storage-seams.md, "Consistency checker"),
// in the manner of bbolt's Tx.Check: it reads every keyspace from one
// snapshot, derives from the items every entry the write path keeps for
// them, and compares both ways. It reports; it never repairs.

// Kinds of problems Check reports (Problem.Kind).
const (
	problemOrphan       = "orphan"       // a stored entry no item derives (or an unknown key)
	problemMissing      = "missing"      // an entry an item derives is absent
	problemDifferent    = "different"    // an entry holds another value than derived
	problemMisplaced    = "misplaced"    // an item outside its keyspace's ranges, or under a key its body contradicts
	problemUnreferenced = "unreferenced" // a keyspace no container's range maps to
	problemShared       = "shared"       // a keyspace two containers claim
	problemLSN          = "lsn"          // an etag past the keyspace's LSNs, or two items with one LSN
	problemRID          = "rid"          // a _rid past the container's reservation, or two items with one _rid
	problemDuplicate    = "duplicate"    // two items of a logical partition with one unique key's values
	problemFormat       = "format"       // no or another format record (indexFormat)
	problemUndecodable  = "undecodable"  // an item whose key or system properties do not decode
	problemCorrupt      = "corrupt"      // a keyspace whose data the store found damaged on disk
)

// maxProblems bounds the problems a report lists; it counts the rest
// (CheckReport.Omitted), so a badly damaged store costs bounded memory.
const maxProblems = 10000

// Problem is one inconsistency Check found.
type Problem struct {
	// Keyspace is the keyspace holding the problem.
	Keyspace uint64
	// Container is the link (dbs/{db}/colls/{id}) of the container whose
	// ranges map to the keyspace; "" for an unreferenced keyspace.
	Container string
	// Kind is one short word: orphan, missing, different, misplaced,
	// unreferenced, shared, lsn, rid, duplicate, format or undecodable.
	Kind string
	// Key is the key involved, relative to the keyspace (the item's, or the
	// entry's); nil for a problem of the whole keyspace.
	Key []byte
	// Detail says what is wrong, for people.
	Detail string
}

// String formats p on one line, with its key in hex.
func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keyspace %d", p.Keyspace)
	if p.Container != "" {
		fmt.Fprintf(&b, " (%s)", p.Container)
	}
	fmt.Fprintf(&b, ": %s", p.Kind)
	if p.Key != nil {
		fmt.Fprintf(&b, " key %x", p.Key)
	}
	fmt.Fprintf(&b, ": %s", p.Detail)
	return b.String()
}

// CheckReport is what Check found. The zero value is an empty report.
type CheckReport struct {
	// Keyspaces, Items and Entries count the keyspaces checked, the items
	// read and the stored entries compared (format, order, index,
	// statistics, change and unique entries, and any unknown key).
	Keyspaces int
	Items     int64
	Entries   int64
	Problems  []Problem // in the order found, at most maxProblems
	Omitted   int       // problems found past maxProblems, not listed
	// SkippedIndex counts the keyspaces whose index entries were not
	// compared: their container's index is being rebuilt for a new
	// indexing policy (the next start finishes an interrupted rebuild).
	SkippedIndex int
	// NotHeld counts the keyspaces the host holds no replica of
	// (replica.ErrNotHeld: a cluster member's data, whose other
	// keyspaces are on other members), not checked.
	NotHeld int
	// Moving counts the keyspaces a separation is filling, or was when
	// it was interrupted (catalog.RangeRecord.Moving), not checked: a
	// partial copy, which the next start (or the separation) settles.
	Moving int
	// Collectable lists the keyspaces no container refers to any more
	// whose ids the catalog allocated (catalog.Catalog.Allocated): the
	// data of a deleted container or database, or of an abandoned
	// separation, that a crash or a stop kept from being dropped. Not a
	// problem: the engine drops them (at its next start, or, online,
	// right after the delete).
	Collectable []uint64
	// Unformatted counts the keyspaces that hold nothing, not even their
	// format record: those of a container whose creation a crash
	// interrupted, which the next start formats. Not a problem.
	Unformatted int
	// Rebuilding counts the keyspaces whose derived entries the next
	// start rebuilds: a start's rebuild a crash interrupted
	// (formatRebuilding), or an older release's format. Their derived
	// entries are not compared. Not a problem.
	Rebuilding int
}

// OK reports whether Check found no problem.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// String prints one line per problem, then a summary line.
func (r *CheckReport) String() string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "… and %d more problems\n", r.Omitted)
	}
	fmt.Fprintf(&b, "checked %d keyspaces, %d items, %d entries: ", r.Keyspaces, r.Items, r.Entries)
	if n := len(r.Problems) + r.Omitted; n > 0 {
		fmt.Fprintf(&b, "%d problems", n)
	} else {
		b.WriteString("no problems")
	}
	if r.SkippedIndex > 0 {
		fmt.Fprintf(&b, " (index entries of %d keyspaces not compared: their index is being rebuilt for a new policy)", r.SkippedIndex)
	}
	if r.NotHeld > 0 {
		fmt.Fprintf(&b, " (%d keyspaces have no replica here: other members hold them)", r.NotHeld)
	}
	if r.Moving > 0 {
		fmt.Fprintf(&b, " (%d keyspaces are being filled by a separation, or were when it was interrupted: not checked; the next start settles them)", r.Moving)
	}
	if r.Rebuilding > 0 {
		fmt.Fprintf(&b, " (derived entries of %d keyspaces not compared: a rebuild is pending, interrupted or from an older release, which the next start makes)", r.Rebuilding)
	}
	if r.Unformatted > 0 {
		fmt.Fprintf(&b, " (%d keyspaces hold nothing and no format record yet, as a container whose creation was interrupted leaves them: the next start writes it)", r.Unformatted)
	}
	if n := len(r.Collectable); n > 0 {
		ids := make([]string, 0, min(n, 10))
		for _, ks := range r.Collectable[:min(n, 10)] {
			ids = append(ids, strconv.FormatUint(ks, 10))
		}
		if n > 10 {
			ids = append(ids, "…")
		}
		fmt.Fprintf(&b, " (%d keyspaces of deleted containers or abandoned separations, %s, not dropped yet: not checked; the next start drops them)", n, strings.Join(ids, ", "))
	}
	b.WriteByte('\n')
	return b.String()
}

func (r *CheckReport) add(p Problem) {
	if len(r.Problems) >= maxProblems {
		r.Omitted++
		return
	}
	r.Problems = append(r.Problems, p)
}

// OpenForCheck returns an engine over host and the catalog in meta for
// Check only (partita check). Unlike New it repairs nothing: it neither
// drops unreferenced keyspaces nor rebuilds derived entries, so Check
// reports a damaged or unconverted store as it is. It writes nothing
// itself (catalog.Open upgrades containers of a format 6 catalog through
// meta; give it a backend that refuses writes to rule that out). Do not
// serve with the engine it returns. A nil log discards.
func OpenForCheck(ctx context.Context, host replica.Host, meta catalog.Backend, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cat, err := catalog.Open(ctx, meta, time.Now)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: Config{}.withDefaults(), log: log, now: time.Now, host: host, cat: cat}
	e.rids.cat = cat
	e.scripts, e.queries = newGate(e.cfg.ScriptSlots), newGate(e.cfg.QuerySlots)
	e.docMem = newDocMemory()
	return e, nil
}

// Check checks the consistency of every keyspace and returns what it found;
// the error is for a check that could not complete (ctx's error,
// replica.ErrUnavailable), with the report so far.
//
// For every container and each keyspace its ranges map to, it reads the
// keyspace from one snapshot and:
//   - derives from each item the order, change, index (when the container's
//     index reflects its current policy), unique key and logical partition
//     statistics entries, with the functions the rebuild uses, and compares
//     them with the stored ones both ways (missing, different, orphan);
//   - checks that every item decodes, that its key agrees with its body,
//     that its EPK lies in a range of the container mapping to this
//     keyspace, that its etag's LSN is one the keyspace issued and its _rid
//     sequence one the container reserved;
//   - checks the format record (indexFormat) and that kind 0x01 holds
//     nothing else. Keys starting with 0x00 belong to the replica and are
//     skipped.
//
// Then it looks at the keyspaces nothing in the catalog refers to, as the
// start (dropOrphans) sees them (referring: a range's keyspace, one a
// separation is filling — catalog.RangeRecord.Moving: a separation a crash
// or a shutdown interrupted, which the next start settles; its partial
// copy is not checked — and one a separated range left data in, until
// collected: catalog.RangeRecord.From, whose data is neither misplaced nor
// orphaned). One whose id the catalog allocated holds the data of a
// deleted container or an abandoned separation that a crash kept from
// being dropped: listed (CheckReport.Collectable), not a problem, since
// the start drops it. One whose id the catalog never allocated is a
// problem: the data and the catalog do not belong together.
//
// Check takes no lock: one snapshot per keyspace makes each keyspace's
// check consistent, so it may run while the engine serves (a container
// changed while its keyspace is read gets a second snapshot). Online, a
// keyspace of a container being deleted, or one a separation is abandoning,
// may show as collectable. Memory: one kind of one keyspace's derived
// entries at a time (all its index entries, say), and the problems, at
// most maxProblems of them.
func (e *Engine) Check(ctx context.Context) (*CheckReport, error) {
	r := &CheckReport{}
	present, err := e.host.Keyspaces(ctx)
	if err != nil {
		return r, fmt.Errorf("engine: check: %w", err)
	}
	owner := map[uint64]*catalog.Container{}
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue // deleted meanwhile
		}
		for _, c := range colls {
			for _, ks := range c.Keyspaces() {
				if o := owner[ks]; o != nil {
					r.add(Problem{Keyspace: ks, Container: c.Link(), Kind: problemShared,
						Detail: "the keyspace is also one of " + o.Link() + "'s (checked there)"})
					continue
				}
				owner[ks] = c
				if err := e.checkKeyspace(ctx, r, c, ks); errors.Is(err, replica.ErrCorrupt) {
					// Reported, and the other keyspaces checked: the check
					// stopped at the first damaged block (it panicked before
					// the store reported corruption as an error).
					r.add(Problem{Keyspace: ks, Container: c.Link(), Kind: problemCorrupt, Detail: err.Error()})
				} else if err != nil {
					return r, fmt.Errorf("engine: check keyspace %d of %s: %w", ks, c.Link(), err)
				}
			}
		}
	}
	var unref []uint64
	for _, ks := range present {
		if owner[ks] == nil {
			unref = append(unref, ks)
		}
	}
	if len(unref) > 0 {
		// Confirm against a fresh look: a container created meanwhile
		// refers to its keyspace now, and one deleted meanwhile has
		// probably had its keyspace dropped.
		again, err := e.host.Keyspaces(ctx)
		if err != nil {
			return r, fmt.Errorf("engine: check: %w", err)
		}
		ref := e.referenced()
		for _, ks := range unref {
			switch c := ref[ks]; {
			case c == nil && slices.Contains(again, ks) && e.cat.Allocated(ks):
				// Dropped after the catalog change that let it go
				// (a container or database delete, an abandoned
				// separation): a crash in between leaves it here.
				r.Collectable = append(r.Collectable, ks)
			case c == nil && slices.Contains(again, ks):
				r.add(Problem{Keyspace: ks, Kind: problemUnreferenced,
					Detail: "no container's range maps to the keyspace, and the catalog never allocated its id: data from another directory, or a catalog older than the data (the next start drops it)"})
			case c != nil && slices.Contains(c.Targets(), ks):
				r.Moving++
			}
		}
	}
	return r, nil
}

// sameLayout reports whether a and b map the same ranges to the same
// keyspaces, with the same separations pending.
func sameLayout(a, b *catalog.Container) bool {
	return slices.EqualFunc(a.Ranges, b.Ranges, func(x, y catalog.RangeRecord) bool {
		return x.ID == y.ID && x.Min == y.Min && x.Max == y.Max && x.Keyspace == y.Keyspace && x.From == y.From
	})
}

// ksCheck is the check of one keyspace of container c.
type ksCheck struct {
	e       *Engine
	r       *CheckReport
	c       *catalog.Container
	ks      uint64
	snap    replica.Snapshot
	lastLSN uint64
	ranges  []partition.Range // c's ranges mapping to ks
	// left are the ranges separated from ks whose leftovers there are yet
	// to be collected (RangeRecord.From): their items and entries are
	// neither misplaced nor orphaned.
	left []partition.Range
	// bad holds the keys of items whose entries of some kind could not be
	// derived (reported once): entries pointing to them are not orphans.
	bad map[string]bool
}

func (k *ksCheck) report(kind string, key []byte, format string, args ...any) {
	k.r.add(Problem{Keyspace: k.ks, Container: k.c.Link(), Kind: kind, Key: bytes.Clone(key), Detail: fmt.Sprintf(format, args...)})
}

// checkKeyspace checks keyspace ks of container c (see Check).
func (e *Engine) checkKeyspace(ctx context.Context, r *CheckReport, c *catalog.Container, ks uint64) error {
	rep, err := e.host.Replica(ks)
	if errors.Is(err, replica.ErrNotHeld) {
		r.NotHeld++
		return nil
	}
	if err != nil {
		return err
	}
	// The catalog is read again after the snapshot: a container changed
	// in between (a new indexing policy whose entries are being rebuilt, a
	// range separated or its leftovers collected) gets another snapshot,
	// and the _rid reservation and the LSNs read afterwards cover
	// everything the snapshot holds.
	var snap replica.Snapshot
	indexOK := false
	for attempt := 0; ; attempt++ {
		if snap, err = rep.Snapshot(); err != nil {
			return err
		}
		cur, err := e.cat.Container(c.DB, c.ID)
		if err != nil || cur.Internal != c.Internal {
			snap.Close()
			return nil // deleted meanwhile: nothing to check
		}
		stable := cur.PolicyJSON() == c.PolicyJSON() && cur.IndexCurrent() == c.IndexCurrent() && sameLayout(cur, c)
		c = cur
		if stable || attempt == 4 {
			indexOK = stable && c.IndexCurrent()
			break
		}
		snap.Close()
	}
	defer snap.Close()
	k := &ksCheck{e: e, r: r, c: c, ks: ks, snap: snap, lastLSN: rep.LastLSN(), bad: map[string]bool{}}
	for _, rec := range c.Ranges {
		rg, ok := c.Map().ByID(rec.ID)
		switch {
		case !ok:
		case rec.Keyspace == ks:
			k.ranges = append(k.ranges, rg)
		case rec.From == ks:
			k.left = append(k.left, rg)
		}
	}
	r.Keyspaces++

	formatOK, err := k.checkMeta(ctx)
	if err != nil {
		return err
	}
	if err := k.checkItems(ctx, formatOK); err != nil {
		return err
	}
	if err := k.checkUnknown(ctx); err != nil {
		return err
	}
	if !formatOK {
		// The next start rebuilds every derived entry: what is stored is
		// not expected to match.
		return nil
	}
	if !indexOK {
		r.SkippedIndex++
	}
	steps := []struct {
		kind byte
		set  entryFunc
		dups string // the problem two items deriving one key are; "" for none of its own
	}{
		{kindOrder, orderEntries, problemRID},
		{kindChange, changeEntries, problemLSN},
		{kindUnique, e.uniqueEntries(c), problemDuplicate},
		{kindIndex, termEntries(c), ""}, // two items with one _rid: reported with the order entries
		{kindComposite, compositeEntries(c), ""},
	}
	for _, st := range steps {
		if (st.kind == kindIndex || st.kind == kindComposite) && !indexOK {
			continue
		}
		if err := k.checkDerived(ctx, st.kind, st.set, st.dups); err != nil {
			return err
		}
	}
	return nil
}

// checkMeta checks the format record, and that kind 0x01 holds nothing
// else but a replicated keyspace's policy and move decisions, and reports
// whether the format is current.
func (k *ksCheck) checkMeta(ctx context.Context) (bool, error) {
	found := false
	ok := false
	err := replica.Scan(ctx, k.snap, kindSpan(kindMeta), func(key, v []byte) bool {
		k.r.Entries++
		switch {
		case bytes.Equal(key, policyKey):
			return true // a replicated keyspace's indexing policy (cluster.go)
		case bytes.Equal(key, fencesKey):
			if _, err := decodeDecisions(v); err != nil {
				k.report(problemOrphan, key, "malformed move decisions: %v", err)
			}
			return true
		case !bytes.Equal(key, formatKey):
			k.report(problemOrphan, key, "unknown engine record in the keyspace")
			return true
		}
		found = true
		switch ok = string(v) == formatString; {
		case ok:
		case pendingFormat(string(v)):
			// A start's rebuild a crash interrupted, or a keyspace of
			// an older release not yet started with this one: the next
			// start rebuilds its derived entries.
			k.r.Rebuilding++
		default:
			k.report(problemFormat, key, "derived entries in format %q, want %d (the next start rebuilds them)", v, indexFormat)
		}
		return true
	})
	if err == nil && !found {
		// A keyspace of a container whose creation a crash interrupted
		// (the catalog record written, not the format record: two
		// writes, the catalog's perhaps in etcd) holds nothing: the next
		// start writes its record, and there is nothing to rebuild.
		empty := true
		err = replica.Scan(ctx, k.snap, replica.Span{Lower: []byte{kindMeta + 1}}, func(_, _ []byte) bool {
			empty = false
			return false
		})
		switch {
		case err != nil:
		case empty:
			k.r.Unformatted++
			ok = true
		default:
			k.report(problemFormat, formatKey, "no format record: the next start rebuilds the keyspace's derived entries")
		}
	}
	return ok, err
}

// pendingFormat reports whether format record v is one the next start
// rebuilds from without anything having gone wrong: the mark of a rebuild
// under way (formatRebuilding), or an older release's format.
func pendingFormat(v string) bool {
	n, err := strconv.Atoi(v)
	return v == formatRebuilding || (err == nil && n > 0 && n < indexFormat)
}

// checkUnknown reports every key of a kind the engine does not write.
func (k *ksCheck) checkUnknown(ctx context.Context) error {
	return replica.Scan(ctx, k.snap, replica.Span{Lower: []byte{kindComposite + 1}}, func(key, _ []byte) bool {
		k.r.Entries++
		k.report(problemOrphan, key, "a key of unknown kind 0x%02x", key[0])
		return true
	})
}

// checkItems checks every item on its own (it decodes, lies in the
// keyspace's ranges, has an LSN and a _rid issued) and, when compare is
// set, its logical partition's statistics: they come in item key order,
// so they are merged with the stored ones as the items go by.
func (k *ksCheck) checkItems(ctx context.Context, compare bool) error {
	var stats *merger
	if compare {
		stats = k.newMerger(kindStats, k.statsDiff, k.statsOrphan)
	}
	var (
		cur     itemKey
		st      lpStats
		started bool
	)
	flush := func() {
		if started && stats != nil {
			stats.offer(statsKey(cur.EPK, cur.PK), [][]byte{st.encode()}, func() string {
				return fmt.Sprintf("the logical partition holds %d items of %d bytes", st.items, st.bytes)
			})
		}
	}
	err := replica.Scan(ctx, k.snap, itemsSpan(), func(key, v []byte) bool {
		k.r.Items++
		ik, pk, ok := k.checkItem(key, v)
		if !ok {
			return true // the key does not decode: no logical partition to count it in
		}
		// As rebuildStats: every item whose key decodes counts.
		if !started || !bytes.Equal(ik.EPK, cur.EPK) || !bytes.Equal(ik.PK, cur.PK) {
			flush()
			cur, st, started = ik, lpStats{}, true
		}
		if st.items == 0 {
			st.key = pk
		}
		st.bytes += int64(len(v))
		st.items++
		return true
	})
	if err != nil {
		if stats != nil {
			stats.close()
		}
		return err
	}
	flush()
	if stats != nil {
		return stats.finish()
	}
	return nil
}

// checkItem checks one item. It returns its decoded key and its partition
// key as JSON ("" if the body does not parse), and whether the key
// decodes. An item that does not decode is in k.bad.
func (k *ksCheck) checkItem(key, v []byte) (ik itemKey, pk string, keyOK bool) {
	ik, err := decodeItemKey(key)
	if err != nil {
		k.bad[string(key)] = true
		k.report(problemUndecodable, key, "the item key does not decode: %v", err)
		return itemKey{}, "", false
	}
	fail := func(format string, args ...any) (itemKey, string, bool) {
		k.bad[string(key)] = true
		k.report(problemUndecodable, key, "item %q: "+format, append([]any{ik.ID}, args...)...)
		return ik, "", true
	}
	props, err := document.Props(v)
	if err != nil {
		return fail("%v", err)
	}
	seq, err := ridSeq(props.RID)
	if err != nil {
		return fail("_rid: %v", err)
	}
	lsn, err := document.ETagSeq(props.ETag)
	if err != nil {
		return fail("_etag: %v", err)
	}
	item, err := document.ParseStoredItem(v, k.c.PK.Paths)
	if err != nil {
		return fail("%v", err)
	}
	switch epk, err := k.c.PK.Hash(item.PK); {
	case item.ID != ik.ID:
		k.report(problemMisplaced, key, "item %q is stored under id %q", item.ID, ik.ID)
	case !bytes.Equal(item.PK.AppendEncoded(nil), ik.PK):
		k.report(problemMisplaced, key, "item %q has partition key %s, not the one of its key", ik.ID, item.PK)
	case err != nil:
		k.report(problemMisplaced, key, "item %q: partition key %s: %v", ik.ID, item.PK, err)
	case !bytes.Equal(epk, ik.EPK):
		k.report(problemMisplaced, key, "item %q is stored under EPK %s; its partition key %s hashes to %s", ik.ID, partition.EPK(ik.EPK), item.PK, epk)
	}
	if !inRanges(k.ranges, ik.EPK) && !inRanges(k.left, ik.EPK) {
		where := "outside the container's ranges"
		if bytes.Compare(ik.EPK, partition.MaxEPK()) < 0 {
			rg := k.c.Map().Locate(ik.EPK)
			ks, _ := k.c.Keyspace(rg.ID)
			where = fmt.Sprintf("in range %s, whose data is in keyspace %d", rg.ID, ks)
		}
		k.report(problemMisplaced, key, "item %q has EPK %s, %s", ik.ID, partition.EPK(ik.EPK), where)
	}
	if lsn > k.lastLSN {
		k.report(problemLSN, key, "item %q was written at LSN %d, past the keyspace's last LSN %d", ik.ID, lsn, k.lastLSN)
	}
	if seq >= k.c.RIDLimit {
		k.report(problemRID, key, "item %q has _rid sequence %d, not below the container's reservation %d", ik.ID, seq, k.c.RIDLimit)
	}
	return ik, item.PK.String(), true
}

func inRanges(rs []partition.Range, epk []byte) bool {
	return slices.ContainsFunc(rs, func(rg partition.Range) bool { return rg.Contains(epk) })
}

// leftover reports whether a stored entry of kind is what a separated
// range left in this keyspace, to be collected: its EPK (from its key, or
// the item key it holds) lies in one of k.left.
func (k *ksCheck) leftover(kind byte, key, v []byte) bool {
	if len(k.left) == 0 {
		return false
	}
	var epk []byte
	var err error
	switch kind {
	case kindStats:
		epk, _, err = decodeStatsKey(key)
	case kindUnique:
		if len(key) < 3 {
			return false
		}
		epk, _, err = readEscaped(key[3:])
	default:
		var ik itemKey
		ik, err = decodeItemKey(storedItemKey(kind, v))
		epk = ik.EPK
	}
	return err == nil && inRanges(k.left, epk)
}

// statsDiff compares a stored statistics record with the derived one. The
// partition key JSON is compared by value: it is for reports only.
func (k *ksCheck) statsDiff(stored []byte, derived [][]byte) string {
	want, _ := decodeStats(derived[0])
	got, err := decodeStats(stored)
	switch {
	case err != nil:
		return err.Error()
	case got.items != want.items || got.bytes != want.bytes:
		return fmt.Sprintf("records %d items of %d bytes; the logical partition holds %d items of %d bytes", got.items, got.bytes, want.items, want.bytes)
	case got.key != want.key && want.key != "":
		if pk, err := document.ParsePKHeader(got.key); err != nil || !pk.Equal(mustPK(want.key)) {
			return fmt.Sprintf("records partition key %s; the items have %s", got.key, want.key)
		}
	}
	return ""
}

// mustPK parses a partition key this package printed (PartitionKey.String).
func mustPK(s string) document.PartitionKey {
	pk, _ := document.ParsePKHeader(s)
	return pk
}

func (k *ksCheck) statsOrphan(key, _ []byte) string {
	if epk, _, err := decodeStatsKey(key); err == nil {
		return fmt.Sprintf("statistics of a logical partition (EPK %s) without items", partition.EPK(epk))
	}
	return "a statistics key that does not decode"
}

// checkDerived compares the entries of one kind that the items derive (set,
// a rebuild's entry function) with the stored ones. dups is the problem
// two items deriving one key are ("" to say nothing).
//
// NB: it holds the keyspace's derived entries of this kind in memory to
// sort them (an item's order, change, index and unique entries do not come
// in item key order); one kind at a time bounds it.
func (k *ksCheck) checkDerived(ctx context.Context, kind byte, set entryFunc, dups string) error {
	sink := &entrySink{}
	err := replica.Scan(ctx, k.snap, itemsSpan(), func(key, v []byte) bool {
		if k.bad[string(key)] {
			return true
		}
		props, err := document.Props(v)
		var seq uint64
		if err == nil {
			seq, err = ridSeq(props.RID)
		}
		n := len(sink.ents)
		if err == nil {
			err = set(sink, key, seq, v)
		}
		if err != nil {
			sink.truncate(n)
			k.bad[string(key)] = true
			k.report(problemUndecodable, key, "the item's entries of kind 0x%02x cannot be derived: %v", kind, err)
		}
		return true
	})
	if err != nil {
		return err
	}
	sink.sort()
	m := k.newMerger(kind, valueDiff(kind), k.entryOrphan(kind))
	for i := 0; i < len(sink.ents); {
		key := sink.key(i)
		j := i + 1
		for j < len(sink.ents) && bytes.Equal(sink.key(j), key) {
			j++
		}
		vals := make([][]byte, 0, j-i)
		for x := i; x < j; x++ {
			vals = append(vals, sink.val(x))
		}
		if j-i > 1 && dups != "" {
			var names []string
			for _, v := range vals {
				names = append(names, strconv.Quote(entryItem(kind, v)))
			}
			k.report(dups, key, "items %s all derive this entry", strings.Join(names, ", "))
		}
		m.offer(key, vals, func() string { return "item " + strconv.Quote(entryItem(kind, vals[0])) + " derives it" })
		i = j
	}
	return m.finish()
}

// storedItemKey is the item key a stored entry of kind holds: a change
// entry's value may carry its transaction's mark after it (changeValue),
// which items do not derive (one written alone derives none).
func storedItemKey(kind byte, v []byte) []byte {
	if kind != kindChange {
		return v
	}
	if ik, _, err := splitChangeValue(v); err == nil {
		return ik
	}
	return v
}

// entryItem names the item an entry of kind holds: unique entries hold its
// id, the others its key.
func entryItem(kind byte, v []byte) string {
	if kind == kindUnique {
		return string(v)
	}
	if ik, err := decodeItemKey(v); err == nil {
		return ik.ID
	}
	return fmt.Sprintf("%x", v)
}

// valueDiff compares a stored entry's value with the derived ones (several
// when items share the entry's key: any of them will do).
func valueDiff(kind byte) func(stored []byte, derived [][]byte) string {
	return func(stored []byte, derived [][]byte) string {
		stored = storedItemKey(kind, stored)
		for _, d := range derived {
			if bytes.Equal(stored, d) {
				return ""
			}
		}
		return fmt.Sprintf("holds item %q; item %q derives it", entryItem(kind, stored), entryItem(kind, derived[0]))
	}
}

// entryOrphan describes a stored entry of kind that no item derives, or
// returns "" for one naming an item whose entries could not be derived
// (reported already).
func (k *ksCheck) entryOrphan(kind byte) func(key, v []byte) string {
	return func(key, v []byte) string {
		if kind == kindUnique {
			return fmt.Sprintf("names item %q, which does not derive it", v)
		}
		v = storedItemKey(kind, v)
		if k.bad[string(v)] {
			return ""
		}
		ik, err := decodeItemKey(v)
		if err != nil {
			return "holds no item key"
		}
		if _, err := k.snap.Get(v); errors.Is(err, replica.ErrNotFound) {
			return fmt.Sprintf("holds item %q, which is gone", ik.ID)
		}
		return fmt.Sprintf("holds item %q, which does not derive it", ik.ID)
	}
}

// merger compares derived entries, offered in key order, with the stored
// entries of one kind, read alongside from the snapshot.
type merger struct {
	k      *ksCheck
	kind   byte
	it     replica.Iter
	valid  bool
	diff   func(stored []byte, derived [][]byte) string // "" when they agree
	orphan func(key, v []byte) string                   // "" to say nothing
}

func (k *ksCheck) newMerger(kind byte, diff func([]byte, [][]byte) string, orphan func(key, v []byte) string) *merger {
	m := &merger{k: k, kind: kind, it: k.snap.NewIter(kindSpan(kind), false), diff: diff, orphan: orphan}
	m.next()
	return m
}

func (m *merger) next() {
	if m.valid = m.it.Next(); m.valid {
		m.k.r.Entries++
	}
}

// offer compares the derived entry key (whose value is one of vals) with
// the stored one; why says which item derives it.
func (m *merger) offer(key []byte, vals [][]byte, why func() string) {
	for m.valid && bytes.Compare(m.it.Key(), key) < 0 {
		m.reportOrphan()
		m.next()
	}
	if m.valid && bytes.Equal(m.it.Key(), key) {
		if d := m.diff(m.it.Value(), vals); d != "" {
			m.k.report(problemDifferent, key, "%s", d)
		}
		m.next()
		return
	}
	m.k.report(problemMissing, key, "absent; %s", why())
}

func (m *merger) reportOrphan() {
	if m.k.leftover(m.kind, m.it.Key(), m.it.Value()) {
		return
	}
	if d := m.orphan(m.it.Key(), m.it.Value()); d != "" {
		m.k.report(problemOrphan, m.it.Key(), "%s", d)
	}
}

// finish reports the stored entries left and closes the iterator.
func (m *merger) finish() error {
	for m.valid {
		m.reportOrphan()
		m.next()
	}
	return m.close()
}

func (m *merger) close() error {
	return errors.Join(m.it.Err(), m.it.Close())
}

// entrySink is a replica.Batch that collects what an entryFunc sets, so
// that Check derives entries with the very functions a rebuild writes
// them with. Keys and values live in one buffer.
type entrySink struct {
	buf  []byte
	ents []struct{ k0, k1, v1 int } // key buf[k0:k1], value buf[k1:v1]
}

var _ replica.Batch = (*entrySink)(nil)

func (s *entrySink) Set(key, value []byte) {
	k0 := len(s.buf)
	s.buf = append(append(s.buf, key...), value...)
	s.ents = append(s.ents, struct{ k0, k1, v1 int }{k0, k0 + len(key), len(s.buf)})
}

func (s *entrySink) key(i int) []byte { e := s.ents[i]; return s.buf[e.k0:e.k1:e.k1] }
func (s *entrySink) val(i int) []byte { e := s.ents[i]; return s.buf[e.k1:e.v1:e.v1] }

// truncate drops the entries from the n-th on (an item whose derivation
// failed half-way).
func (s *entrySink) truncate(n int) {
	if n < len(s.ents) {
		s.buf = s.buf[:s.ents[n].k0]
		s.ents = s.ents[:n]
	}
}

// sort orders the entries by key; entries of one key keep their item key
// order.
func (s *entrySink) sort() {
	slices.SortStableFunc(s.ents, func(a, b struct{ k0, k1, v1 int }) int {
		return bytes.Compare(s.buf[a.k0:a.k1], s.buf[b.k0:b.k1])
	})
}

// The entry functions only set: the rest of a batch is never used.

func (s *entrySink) Get([]byte) ([]byte, error)              { return nil, replica.ErrNotFound }
func (s *entrySink) NewIter(replica.Span, bool) replica.Iter { return emptyIter{} }
func (s *entrySink) Delete([]byte)                           {}
func (s *entrySink) DeleteSpan(replica.Span)                 {}
func (s *entrySink) Empty() bool                             { return len(s.ents) == 0 }
func (s *entrySink) Close()                                  {}

type emptyIter struct{}

func (emptyIter) Next() bool    { return false }
func (emptyIter) Key() []byte   { return nil }
func (emptyIter) Value() []byte { return nil }
func (emptyIter) Err() error    { return nil }
func (emptyIter) Close() error  { return nil }

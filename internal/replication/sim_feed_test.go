package replication

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// The change feed in the simulation, as the engine keeps and reads it
// (engine/changefeed.go): every write also writes a change entry under its
// LSN in its group's keyspace, naming the logical partition and the
// write's number (all versions are kept: a feed of every version), and a
// move copies the partition's entries with their LSNs. A reader of a
// logical partition keeps one position, an LSN, across moves (the new
// group's LSNs continue the source's); a read at a node reads the group
// the node's catalog routes the partition to, up to that node's stable
// mark (Replica.StableLSN), fenced if the partition moved out, and moves
// its position to the mark. Checked: each reader gets the partition's
// versions in order (LSNs and numbers increasing) and none twice, and,
// drained at the end, every version the partition's group holds, exactly
// once.

// feedReaders is how many readers follow each logical partition.
const feedReaders = 2

type feedReader struct {
	lp      int
	pos     uint64 // the LSN read to
	lastLSN uint64 // the last version delivered: its LSN and number
	lastNum int
	got     map[int]bool // the numbers delivered
}

// relFeed is the change entry of LSN lsn in a group's keyspace (a batch's
// key).
func relFeed(lsn uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("\x04f"), lsn)
}

func feedKey(g, lsn uint64) []byte {
	return append(replica.KeyspacePrefix(g), relFeed(lsn)...)
}

func feedValue(lp, num int) []byte { return fmt.Appendf(nil, "%d:%d", lp, num) }

// feedEntries calls fn with st's change entries of lp in group g with LSNs
// in (after, upTo], in LSN order.
func feedEntries(st *store.Store, g uint64, lp int, after, upTo uint64, fn func(lsn uint64, num int)) error {
	if upTo <= after {
		return nil
	}
	it := st.NewIter(store.Span{Lower: feedKey(g, after+1), Upper: feedKey(g, upTo+1)}, false)
	defer it.Close()
	prefix := len(replica.KeyspacePrefix(g)) + 2
	for it.Next() {
		l, n, ok := strings.Cut(string(it.Value()), ":")
		if !ok {
			return fmt.Errorf("change entry %q", it.Value())
		}
		if l != strconv.Itoa(lp) {
			continue
		}
		num, _ := strconv.Atoi(n)
		fn(binary.BigEndian.Uint64(it.Key()[prefix:]), num)
	}
	return it.Err()
}

// feedRead is a read of a random reader at a random node.
func (s *sim) feedRead() {
	if len(s.readers) == 0 || s.feedErr != nil {
		return
	}
	rd := s.readers[s.rng.IntN(len(s.readers))]
	n := s.nodes[s.rng.IntN(simNodes)]
	if !n.running() {
		return
	}
	s.readFeed(rd, n)
}

// readFeed reads rd's partition at n, as the engine serves a change feed
// page there.
func (s *sim) readFeed(rd *feedReader, n *simNode) {
	g := n.view[rd.lp]
	r, err := n.rep(g)
	if err != nil {
		return
	}
	stable := r.StableLSN()
	if fenced(n.st, g, rd.lp) {
		return // moved away: the node syncs its catalog, the reader comes back
	}
	s.stats.feedReads++
	err = feedEntries(n.st, g, rd.lp, rd.pos, stable, func(lsn uint64, num int) {
		if s.feedErr != nil {
			return
		}
		if lsn <= rd.lastLSN || num <= rd.lastNum || rd.got[num] {
			l, _ := n.h.Leader(g)
			s.feedErr = fmt.Errorf("step %d: change feed of lp %d read at node %d (group %d, leader %d, term %d, settled %v) from position %d to stable %d: "+
				"version %d at LSN %d after version %d at LSN %d (delivered before: %v)",
				s.now, rd.lp, n.id, g, l.ID, l.Term, l.Settled, rd.pos, stable, num, lsn, rd.lastNum, rd.lastLSN, rd.got[num])
			return
		}
		rd.lastLSN, rd.lastNum, rd.got[num] = lsn, num, true
		s.stats.feedVersions++
	})
	if err != nil && s.feedErr == nil {
		s.feedErr = err
	}
	rd.pos = max(rd.pos, stable)
}

// drainFeeds reads every reader to the end at its partition's settled
// leader and checks that it got every version the group holds, once.
func (s *sim) drainFeeds() error {
	if s.feedErr != nil {
		return s.feedErr
	}
	for _, rd := range s.readers {
		g := s.route[rd.lp]
		n, _ := s.settledLeader(g)
		if n == nil {
			s.stats.feedUndrained++
			continue
		}
		n.view[rd.lp] = g
		s.readFeed(rd, n)
		if s.feedErr != nil {
			return s.feedErr
		}
		// Every version the group holds at or below the position read
		// to was delivered; those above it (a new leader's mark lags its
		// log until it publishes one) are counted.
		var missing []int
		held := map[int]bool{}
		if err := feedEntries(n.st, g, rd.lp, 0, math.MaxUint64-1, func(lsn uint64, num int) {
			held[num] = true
			switch {
			case rd.got[num]:
			case lsn <= rd.pos:
				missing = append(missing, num)
			default:
				s.stats.feedAbove++
			}
		}); err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("change feed of lp %d: drained at node %d (group %d), it never delivered versions %v, which the group holds", rd.lp, n.id, g, missing)
		}
		for num := range rd.got {
			if !held[num] {
				return fmt.Errorf("change feed of lp %d: it delivered version %d, which group %d does not hold", rd.lp, num, g)
			}
		}
	}
	return nil
}

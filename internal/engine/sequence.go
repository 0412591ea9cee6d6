package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/partitadb/partita/internal/store"
)

// seqBlock is how many sequence numbers one durable reservation covers: a
// restart skips at most this many, and a reservation costs one synced write.
const seqBlock = 1 << 16

var seqKey = store.MetaKey([]byte("eng/seq"))

// sequencer issues the node's logical sequence numbers (LSNs): strictly
// increasing, never reused across restarts. Item etags, _rids and session
// tokens come from them.
//
// Transactions take numbers before they commit, and commit in any order, so
// the sequencer also tracks which numbers may still be committed: stable
// is the largest number at or below which every number issued to a
// transaction is committed or abandoned. A change-feed reader stops there,
// so a slow transaction cannot commit behind a position already handed out.
type sequencer struct {
	st *store.Store
	mu struct {
		sync.Mutex
		next, limit uint64
		// open counts the open transactions by the first number each took.
		open map[uint64]int
	}
}

func newSequencer(st *store.Store) (*sequencer, error) {
	s := &sequencer{st: st}
	v, err := st.Get(seqKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.mu.next = 1
	case err != nil:
		return nil, err
	case len(v) != 8:
		return nil, fmt.Errorf("engine: bad sequence record")
	default:
		// Everything below the reserved limit may have been handed out.
		s.mu.next = binary.BigEndian.Uint64(v)
	}
	s.mu.limit = s.mu.next
	s.mu.open = map[uint64]int{}
	return s, nil
}

// next returns a fresh sequence number for the transaction that holds
// first: if *first is 0, the number becomes *first, and holds stable below
// it until release(*first).
func (s *sequencer) next(first *uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.next >= s.mu.limit {
		limit := s.mu.next + seqBlock
		b := s.st.NewBatch()
		b.Set(seqKey, binary.BigEndian.AppendUint64(nil, limit))
		if err := b.Commit(); err != nil {
			return 0, fmt.Errorf("reserve sequence numbers: %w", err)
		}
		s.mu.limit = limit
	}
	n := s.mu.next
	s.mu.next++
	if *first == 0 {
		*first = n
		s.mu.open[n]++
	}
	return n, nil
}

// release ends the hold of a transaction whose first number was first
// (after its commit, or when it is abandoned); 0 is a no-op.
func (s *sequencer) release(first uint64) {
	if first == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.open[first]--; s.mu.open[first] <= 0 {
		delete(s.mu.open, first)
	}
}

// stable returns the largest sequence number at or below which no number is
// held by an open transaction.
func (s *sequencer) stable() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.mu.next - 1
	for first := range s.mu.open {
		w = min(w, first-1)
	}
	return w
}

// last returns the most recently issued sequence number (0 if none).
func (s *sequencer) last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.next - 1
}

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
type sequencer struct {
	st *store.Store
	mu struct {
		sync.Mutex
		next, limit uint64
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
	return s, nil
}

// next returns a fresh sequence number.
func (s *sequencer) next() (uint64, error) {
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
	return n, nil
}

// last returns the most recently issued sequence number (0 if none).
func (s *sequencer) last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.next - 1
}

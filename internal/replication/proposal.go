package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind is what a proposal does when it is applied.
type Kind uint8

const (
	// KindBatch applies a batch of writes to the group's keyspace.
	KindBatch Kind = iota + 1
	// KindMark only carries the leader's stable LSN to the followers.
	KindMark
)

// Proposal is what a leader proposes to its group: the effects of one write,
// already evaluated (proposer-evaluated, docs/cluster.md), with the LSNs they
// carry.
type Proposal struct {
	Kind Kind
	// Term is the leader's term when the write was evaluated. It is applied
	// only if its log entry has that term (docs/cluster.md, invariant 2).
	Term uint64
	// LSN is the largest LSN the leader had issued when it proposed, to
	// this write or to another still open (0: none). A new leader issues
	// LSNs above the largest applied.
	LSN uint64
	// LSNs are the LSNs this write's own changes took, ascending: a
	// follower that applies it answers that they are applied
	// (Host.LSNApplied), which LSN, the leader's largest issued, does not
	// tell.
	LSNs []uint64
	// Stable is the leader's stable LSN when it proposed: every LSN at or
	// below it is in an earlier entry or abandoned.
	Stable uint64
	// Repr is the batch of writes (store.Batch.Repr), absolute keys inside
	// the group's keyspace.
	Repr []byte
}

// envelope is a proposal as a log entry carries it, with who proposed it.
type envelope struct {
	Proposal
	node, id uint64 // the proposing node and its proposal id there
}

// envelopeVersion 2 adds the write's own LSNs (Proposal.LSNs) after the
// stable mark: a count, then each as its difference from the one before
// (the first from 0). Version 1 entries, which have none, still decode.
const envelopeVersion = 2

func (e envelope) encode() []byte {
	b := make([]byte, 0, 48+3*len(e.LSNs)+len(e.Repr))
	b = append(b, envelopeVersion, byte(e.Kind))
	b = binary.AppendUvarint(b, e.node)
	b = binary.AppendUvarint(b, e.id)
	b = binary.AppendUvarint(b, e.Term)
	b = binary.AppendUvarint(b, e.LSN)
	b = binary.AppendUvarint(b, e.Stable)
	b = binary.AppendUvarint(b, uint64(len(e.LSNs)))
	var prev uint64
	for _, l := range e.LSNs {
		b = binary.AppendUvarint(b, l-prev)
		prev = l
	}
	return append(b, e.Repr...)
}

var errEnvelope = errors.New("replication: malformed log entry")

func decodeEnvelope(b []byte) (envelope, error) {
	if len(b) < 2 || (b[0] != envelopeVersion && b[0] != 1) {
		return envelope{}, fmt.Errorf("%w: version %v", errEnvelope, b[:min(len(b), 1)])
	}
	version := b[0]
	e := envelope{Proposal: Proposal{Kind: Kind(b[1])}}
	b = b[2:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	for _, p := range []*uint64{&e.node, &e.id, &e.Term, &e.LSN, &e.Stable} {
		v, ok := next()
		if !ok {
			return envelope{}, errEnvelope
		}
		*p = v
	}
	if version >= 2 {
		count, ok := next()
		if !ok || count > uint64(len(b)) { // each takes a byte at least
			return envelope{}, errEnvelope
		}
		if count > 0 {
			e.LSNs = make([]uint64, count)
		}
		var prev uint64
		for i := range e.LSNs {
			d, ok := next()
			if !ok || (i > 0 && d == 0) || prev+d < prev {
				return envelope{}, errEnvelope
			}
			prev += d
			e.LSNs[i] = prev
		}
	}
	if e.Kind != KindBatch && e.Kind != KindMark {
		return envelope{}, fmt.Errorf("%w: kind %d", errEnvelope, e.Kind)
	}
	e.Repr = b
	return e, nil
}

// applied is a group's applied state, kept in its keyspace (appliedKey) and
// written with every entry applied.
type applied struct {
	Index  uint64 // the last log index applied
	LSN    uint64 // the largest LSN applied
	Stable uint64 // the stable LSN the last applied proposal carried
	// lsns are the LSNs the proposals apply just applied took for their
	// own writes (Proposal.LSNs; not encoded: Host.noteApplied moves them
	// to the group's above).
	lsns []uint64
}

func (a applied) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, a.Index)
	b = binary.BigEndian.AppendUint64(b, a.LSN)
	return binary.BigEndian.AppendUint64(b, a.Stable)
}

func decodeApplied(b []byte) (applied, error) {
	if len(b) != 24 {
		return applied{}, fmt.Errorf("replication: applied state of %d bytes", len(b))
	}
	return applied{Index: binary.BigEndian.Uint64(b), LSN: binary.BigEndian.Uint64(b[8:]), Stable: binary.BigEndian.Uint64(b[16:])}, nil
}

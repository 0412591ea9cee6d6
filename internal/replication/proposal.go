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
	// LSN is the largest LSN the write issued (0: none). A new leader
	// issues LSNs above the largest applied.
	LSN uint64
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

const envelopeVersion = 1

func (e envelope) encode() []byte {
	b := make([]byte, 0, 48+len(e.Repr))
	b = append(b, envelopeVersion, byte(e.Kind))
	b = binary.AppendUvarint(b, e.node)
	b = binary.AppendUvarint(b, e.id)
	b = binary.AppendUvarint(b, e.Term)
	b = binary.AppendUvarint(b, e.LSN)
	b = binary.AppendUvarint(b, e.Stable)
	return append(b, e.Repr...)
}

var errEnvelope = errors.New("replication: malformed log entry")

func decodeEnvelope(b []byte) (envelope, error) {
	if len(b) < 2 || b[0] != envelopeVersion {
		return envelope{}, fmt.Errorf("%w: version %v", errEnvelope, b[:min(len(b), 1)])
	}
	e := envelope{Proposal: Proposal{Kind: Kind(b[1])}}
	b = b[2:]
	for _, p := range []*uint64{&e.node, &e.id, &e.Term, &e.LSN, &e.Stable} {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return envelope{}, errEnvelope
		}
		*p, b = v, b[n:]
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
	// lsns are the LSNs of the proposals apply just applied (not
	// encoded: Host.noteApplied moves them to the group's above).
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

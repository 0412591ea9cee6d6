package replication

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/partitadb/partita/internal/store"
)

// Digest summarises one replica's copy of a group's replicated state: its
// keyspace, every key and value, as a snapshot ships it (snapshot.go). Two
// replicas that applied the same log up to the same index hold the same
// keyspace, so their digests at that index are equal; the group's Raft
// state (log entries, hard state, log bounds, under 0x11 <group>) differs
// between replicas and lies outside the keyspace, so it is not hashed.
type Digest struct {
	// Applied is the last log index applied to the state hashed (the
	// applied state read from the same store snapshot as the data).
	Applied uint64
	// Sum is the SHA-256 of the keyspace's snapshot encoding: for every
	// key in order, uvarint(len(key)) key uvarint(len(value)) value, keys
	// relative to the keyspace (the applied state's key among them).
	Sum [sha256.Size]byte
	// Keys is how many keys the keyspace holds, the applied state's
	// included.
	Keys uint64
}

// Digest hashes this node's replica of group from one consistent snapshot
// of the store, so the data and the applied index it reports belong
// together however far the replica applies meanwhile. It reads the whole
// keyspace (checking ctx every 256 keys): an operator's check, not a
// request path. Errors: ErrNoGroup, the store's refusal (store.ErrUnavailable,
// store.ErrClosed), or ctx's error.
//
// Why SHA-256: the point is to tell replicas apart with no doubt left, and
// a cryptographic hash makes an accidental collision of two different
// keyspaces unthinkable; it runs at hundreds of MB/s or more, faster than
// the scan feeds it, so a cheaper 64-bit hash would save nothing that
// shows. The encoding is length-prefixed, so no two different keyspaces
// encode to the same bytes.
func (h *Host) Digest(ctx context.Context, group uint64) (Digest, error) {
	h.mu.Lock()
	_, ok := h.groups[group]
	h.mu.Unlock()
	if !ok {
		return Digest{}, ErrNoGroup
	}
	sn, err := h.st.NewSnapshot()
	if err != nil {
		return Digest{}, fmt.Errorf("replication: group %d: digest: %w", group, err)
	}
	defer sn.Close()
	d, found, err := digestSpan(ctx, sn, group)
	if err != nil {
		return Digest{}, fmt.Errorf("replication: group %d: digest: %w", group, err)
	}
	if !found {
		// The snapshot was taken after Remove deleted the keyspace.
		return Digest{}, ErrNoGroup
	}
	return d, nil
}

// digestSpan hashes group's keyspace in sn; found is false when it holds
// no applied state (no replica of the group).
func digestSpan(ctx context.Context, sn *store.Snapshot, group uint64) (d Digest, found bool, err error) {
	prefix := keyspacePrefixLen(group)
	it := sn.NewIter(keyspaceSpan(group), false)
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	sum := sha256.New()
	var lens [2 * binary.MaxVarintLen64]byte
	for it.Next() {
		if d.Keys%256 == 255 {
			if err := ctx.Err(); err != nil {
				return Digest{}, false, err
			}
		}
		k, v := it.Key()[prefix:], it.Value()
		if v == nil {
			if err := it.Err(); err != nil {
				return Digest{}, false, err // the value could not be read
			}
		}
		if bytes.Equal(k, appliedRel) {
			a, err := decodeApplied(v)
			if err != nil {
				return Digest{}, false, err
			}
			d.Applied, found = a.Index, true
		}
		writePair(sum, lens[:], k, v)
		d.Keys++
	}
	if err := it.Err(); err != nil {
		return Digest{}, false, err
	}
	sum.Sum(d.Sum[:0])
	return d, found, nil
}

// writePair adds one key and value to sum in the snapshot's encoding
// (eachPair reads it); buf is scratch space for the two lengths.
func writePair(sum hash.Hash, buf []byte, k, v []byte) {
	n := binary.PutUvarint(buf, uint64(len(k)))
	sum.Write(buf[:n])
	sum.Write(k)
	n = binary.PutUvarint(buf, uint64(len(v)))
	sum.Write(buf[:n])
	sum.Write(v)
}

// keyspacePrefixLen is the length of group's keyspace prefix.
func keyspacePrefixLen(group uint64) int { return len(keyspaceSpan(group).Lower) }

package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partitadb/partita/internal/store"
)

// A snapshot of a group is its keyspace's applied state, every key and
// value (the applied state among them), encoded as a sequence of
// uvarint-length-prefixed relative keys and values. It is built in memory
// when Raft needs one to catch up a replica whose entries were truncated:
// fine for the keyspaces of this stage, to be streamed for large ones
// (docs/cluster.md).

// snapshot returns g's snapshot at its applied state.
func (h *Host) snapshot(g *group) (*pb.Snapshot, error) {
	sn, err := h.st.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer sn.Close()
	span := keyspaceSpan(g.id)
	var data []byte
	it := sn.NewIter(span, false)
	for it.Next() {
		k, v := it.Key()[len(g.prefix):], it.Value()
		data = binary.AppendUvarint(data, uint64(len(k)))
		data = append(data, k...)
		data = binary.AppendUvarint(data, uint64(len(v)))
		data = append(data, v...)
	}
	// Err first: an iterator that could not be made (the store closing or
	// failed) walks nothing and closes without error, which would ship an
	// empty snapshot.
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, fmt.Errorf("replication: group %d: snapshot: %w", g.id, err)
	}
	a, err := snapshotApplied(data)
	if err != nil {
		return nil, err
	}
	term, err := g.ls.Term(a.Index)
	if err != nil {
		return nil, fmt.Errorf("replication: group %d: snapshot at %d: %w", g.id, a.Index, err)
	}
	return &pb.Snapshot{
		Data:     data,
		Metadata: &pb.SnapshotMetadata{Index: new(a.Index), Term: new(term), ConfState: g.ls.trunc.conf},
	}, nil
}

// eachPair calls fn with every key and value of snapshot data.
func eachPair(data []byte, fn func(k, v []byte)) error {
	for len(data) > 0 {
		var kv [2][]byte
		for i := range kv {
			n, w := binary.Uvarint(data)
			if w <= 0 || uint64(len(data)-w) < n {
				return errors.New("replication: malformed snapshot")
			}
			kv[i], data = data[w:w+int(n)], data[w+int(n):]
		}
		fn(kv[0], kv[1])
	}
	return nil
}

// appliedRel is the applied state's key relative to the keyspace.
var appliedRel = []byte{0x00, 'a', 'p', 'p', 'l', 'i', 'e', 'd'}

// snapshotApplied returns the applied state a snapshot holds.
func snapshotApplied(data []byte) (applied, error) {
	var (
		a     applied
		found bool
		err   error
	)
	perr := eachPair(data, func(k, v []byte) {
		if bytes.Equal(k, appliedRel) {
			a, err = decodeApplied(v)
			found = true
		}
	})
	switch {
	case perr != nil:
		return applied{}, perr
	case err != nil:
		return applied{}, err
	case !found:
		return applied{}, errors.New("replication: snapshot without applied state")
	}
	return a, nil
}

// installSnapshot adds to b the replacement of g's keyspace and log by snap.
func (h *Host) installSnapshot(b *store.Batch, g *group, snap *pb.Snapshot) error {
	b.DeleteSpan(keyspaceSpan(g.id))
	err := eachPair(snap.GetData(), func(k, v []byte) {
		b.Set(append(append(make([]byte, 0, len(g.prefix)+len(k)), g.prefix...), k...), v)
	})
	if err != nil {
		return err
	}
	md := snap.GetMetadata()
	b.DeleteSpan(store.Span{Lower: entryKey(g.id, 0), Upper: raftPrefix(g.id + 1)})
	return g.ls.setBounds(b, bounds{index: md.GetIndex(), term: md.GetTerm(), conf: md.GetConfState()})
}

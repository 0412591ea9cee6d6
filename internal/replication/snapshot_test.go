package replication

import (
	"bufio"
	"bytes"
	"context"

	pb "go.etcd.io/raft/v3/raftpb"
)

// shipSnapshot carries snapshot message m from host from to host to as a
// transport does: the stream WriteSnapshot writes, read by ReadSnapshot,
// and the outcome reported to the sender. It returns ReadSnapshot's error
// (or WriteSnapshot's).
func shipSnapshot(from, to *Host, m Message) error {
	var buf bytes.Buffer
	_, err := from.WriteSnapshot(context.Background(), &buf, m)
	if err == nil {
		err = to.ReadSnapshot(&buf)
	}
	from.ReportSnapshot(m.Group, m.Raft.GetTo(), err == nil)
	return err
}

// snapshotPairs returns the pairs of group's snapshot stream from h, in
// their encoding, concatenated.
func snapshotPairs(h *Host, group uint64, to uint64) ([]byte, error) {
	var buf bytes.Buffer
	m := Message{Group: group, Raft: &pb.Message{Type: pb.MsgSnap.Enum(), To: new(to), From: new(h.id)}}
	if _, err := h.WriteSnapshot(context.Background(), &buf, m); err != nil {
		return nil, err
	}
	br := bufio.NewReader(&buf)
	if _, err := readFrame(br, nil); err != nil { // the header
		return nil, err
	}
	var out []byte
	for {
		f, err := readFrame(br, nil)
		if err != nil {
			return nil, err
		}
		if len(f) == 0 {
			return out, nil
		}
		out = append(out, f...)
	}
}

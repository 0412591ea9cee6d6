package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// Move decisions and fences (docs/cluster.md, "Separations in a cluster").
// In a cluster, whether a separation's move happens is decided in its
// source keyspace's own log, by its settled leader: a decision record for
// the target keyspace, "moved" (a fence: the source no longer serves the
// range's span) or "abandoned". Whichever a keyspace holds first stands:
// decideMove never records a second decision for a target. Every
// transaction and read of a replicated keyspace checks the fences of the
// spans it touches, so a node whose catalog has not yet seen a move can
// neither write the moved range into its old keyspace nor read it there.

// fencesKey holds a keyspace's move decisions (encodeDecisions).
var fencesKey = []byte{kindMeta, 'f', 'e', 'n', 'c', 'e', 's'}

// The states of a move decision.
const (
	moveMoved     byte = 'm' // the range's span was moved out: a fence
	moveAbandoned byte = 'a' // the move was given up; the range stays
)

// movedCut marks, in an encoded record, a "moved" decision followed by its
// cut; a record of moveMoved (written before decisions carried their cut)
// decodes with cut 0.
const movedCut byte = 'M'

// decision is one move decision of a keyspace: the range [min, max) moved
// (or was to move) to keyspace to. A "moved" decision carries the
// separation's cut (catalog.RangeRecord.Cut), so that whichever node
// records the move in the catalog records the cut with it.
type decision struct {
	state    byte
	to       uint64
	min, max partition.EPK
	cut      uint64
}

// fences returns whether d fences epk.
func (d decision) fences(epk partition.EPK) bool {
	return d.state == moveMoved && bytes.Compare(d.min, epk) <= 0 && bytes.Compare(epk, d.max) < 0
}

// overlaps returns whether d fences part of r.
func (d decision) overlaps(r partition.Range) bool {
	return d.state == moveMoved && bytes.Compare(d.min, r.Max) < 0 && bytes.Compare(r.Min, d.max) < 0
}

// encodeDecisions encodes ds: per decision, its state (movedCut for a
// "moved" one), its target (8 bytes, big-endian), and its bounds, each as
// a uvarint length and bytes; then, for a "moved" one, its cut (uvarint).
func encodeDecisions(ds []decision) []byte {
	var b []byte
	for _, d := range ds {
		state := d.state
		if state == moveMoved {
			state = movedCut
		}
		b = append(b, state)
		b = binary.BigEndian.AppendUint64(b, d.to)
		b = binary.AppendUvarint(b, uint64(len(d.min)))
		b = append(b, d.min...)
		b = binary.AppendUvarint(b, uint64(len(d.max)))
		b = append(b, d.max...)
		if d.state == moveMoved {
			b = binary.AppendUvarint(b, d.cut)
		}
	}
	return b
}

func decodeDecisions(b []byte) ([]decision, error) {
	var ds []decision
	for len(b) > 0 {
		if len(b) < 9 || b[0] != moveMoved && b[0] != moveAbandoned && b[0] != movedCut {
			return nil, fmt.Errorf("%w: move decision record %x", errBadKey, b)
		}
		withCut := b[0] == movedCut
		d := decision{state: b[0], to: binary.BigEndian.Uint64(b[1:9])}
		if withCut {
			d.state = moveMoved
		}
		b = b[9:]
		for _, bound := range []*partition.EPK{&d.min, &d.max} {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return nil, fmt.Errorf("%w: move decision record bound", errBadKey)
			}
			*bound = bytes.Clone(b[w : w+int(n)])
			b = b[w+int(n):]
		}
		if withCut {
			cut, w := binary.Uvarint(b)
			if w <= 0 {
				return nil, fmt.Errorf("%w: move decision record cut", errBadKey)
			}
			d.cut = cut
			b = b[w:]
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// readDecisions returns the move decisions r holds (none, most often).
func readDecisions(r replica.Reader) ([]decision, error) {
	v, err := r.Get(fencesKey)
	switch {
	case errors.Is(err, replica.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return decodeDecisions(v)
}

// errRangeMoved fails an operation, before it wrote anything, on a
// keyspace that fences what the operation touches: this node's catalog
// has not yet seen a move (or the move is being recorded). The API syncs
// the catalog and serves the request again (RangeMoved).
type errRangeMoved struct {
	keyspace uint64
}

func (e *errRangeMoved) Error() string {
	return fmt.Sprintf("engine: keyspace %d no longer holds the partition: it was moved to a keyspace of its own", e.keyspace)
}

// RangeMoved reports whether err (from an engine call) failed because the
// partition it addressed was moved out of the keyspace this node's catalog
// maps it to (docs/cluster.md, "Separations in a cluster"). Nothing was
// written: syncing the catalog (SyncCatalog) and serving the request again
// reaches the partition where it lives now.
func RangeMoved(err error) bool {
	_, ok := errors.AsType[*errRangeMoved](err)
	return ok
}

// rangeMovedStatus is the client's answer to an errRangeMoved the API's
// retries did not get past (the move is not recorded in the catalog yet).
func rangeMovedStatus(err *errRangeMoved) *status.Error {
	return status.Unavailable(fmt.Sprintf("the partition is being moved to replicas of its own (from keyspace %d) and its new place "+
		"is not yet recorded in the catalog; retry", err.keyspace)).Wrap(err)
}

// SyncCatalog returns once this node's catalog holds every change other
// nodes made before the call (a no-op on a single node).
func (e *Engine) SyncCatalog(ctx context.Context) error {
	return translate(e.cat.Sync(ctx))
}

// CatalogCurrent returns nil once this node's catalog holds every catalog
// change acknowledged before the call (a no-op on a single node); a 503
// when that cannot be confirmed. Writes and linearizable reads call it
// before anything is looked up (docs/cluster.md, "Catalog changes every
// node has seen").
func (e *Engine) CatalogCurrent(ctx context.Context) error {
	return translate(e.cat.Current(ctx))
}

// CatalogMark returns a mark of this node's catalog changes so far, for
// CatalogPropagated.
func (e *Engine) CatalogMark() int64 { return e.cat.Mark() }

// CatalogPropagated returns at once when this node changed the catalog
// nothing since mark (CatalogMark), and otherwise once its last change can
// be missed by no node's current catalog (a no-op on a single node): a
// client's metadata request is answered after it. It fails only when ctx
// ends.
func (e *Engine) CatalogPropagated(ctx context.Context, mark int64) error {
	return e.cat.Propagated(ctx, mark)
}

// checkFence fails with errRangeMoved when keyspace r (ks) fences epk.
// Only a replicated engine's catalog can be behind its keyspaces: on one
// node it checks nothing.
func (e *Engine) checkFence(r replica.Reader, ks uint64, epk partition.EPK) error {
	if !e.cfg.Replicated {
		return nil
	}
	ds, err := readDecisions(r)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.fences(epk) {
			return &errRangeMoved{keyspace: ks}
		}
	}
	return nil
}

// checkFences fails with errRangeMoved when keyspace r (ks) fences part of
// a range c maps to it: c is behind the keyspace. Reads check it after they
// read r (or on the snapshot they read): a leftover collected, or a
// version replaced in the range's new keyspace, comes after the fence in
// the keyspace's log.
func (e *Engine) checkFences(r replica.Reader, c *catalog.Container, ks uint64) error {
	if !e.cfg.Replicated {
		return nil
	}
	ds, err := readDecisions(r)
	if err != nil || len(ds) == 0 {
		return err
	}
	for _, rg := range c.Map().Ranges() {
		if k, _ := c.Keyspace(rg.ID); k != ks {
			continue
		}
		for _, d := range ds {
			if d.overlaps(rg) {
				return &errRangeMoved{keyspace: ks}
			}
		}
	}
	return nil
}

// decideMove records, in keyspace src (which this node must lead as
// settled leader, with the container's writers held off), the decision
// state for the move of range r to keyspace to (with the separation's cut,
// for a "moved" one), unless src holds one for that target already; it
// returns the decision that stands.
func (e *Engine) decideMove(src replica.Replica, state byte, to uint64, r partition.Range, cut uint64) (decision, error) {
	b := src.NewBatch(true)
	defer b.Close()
	v, err := b.Get(fencesKey)
	switch {
	case errors.Is(err, replica.ErrNotFound):
		v = nil
	case err != nil:
		return decision{}, err
	}
	ds, err := decodeDecisions(v)
	if err != nil {
		return decision{}, err
	}
	for _, d := range ds {
		if d.to == to {
			return d, nil
		}
	}
	d := decision{state: state, to: to, min: r.Min, max: r.Max}
	if state == moveMoved {
		d.cut = cut
	}
	ds = append(ds, d)
	b.Set(fencesKey, encodeDecisions(ds))
	if err := src.Commit(b); err != nil {
		return decision{}, err
	}
	return d, nil
}

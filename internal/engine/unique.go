package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// Unique keys (Cosmos DB's uniqueKeyPolicy). For each unique key of its
// container and each item, a logical partition holds one entry
// (uniqueKey) keyed by the tuple of the item's values at the key's
// paths and holding the item's id; the partition key is part of the entry
// key, so uniqueness is per logical partition, as in Cosmos DB. Entries are
// written in the transaction's batch with the item, so a create, upsert,
// replace, patch, batch or stored procedure sees the writes made before it
// in the same transaction and checks against them under the logical
// partition's lock.
//
// An entry may be stale: an item that expired (time to live) or was dropped
// without the engine's help leaves its entries behind. So an entry naming
// another item is a conflict only if that item is visible and still has the
// tuple; otherwise the write takes the entry over. For the same reason an
// entry is removed only by the item it names.

// uniqueCheck is one unique key entry a write takes.
type uniqueCheck struct {
	set, drop []byte // entry to set; the item's old entry to drop (nil: none)
}

// checkUnique checks the container's unique keys for item id changing
// from old to new (stored JSON; old nil for a create, new nil for a
// delete) and returns the entry changes, which applyUnique writes once
// every other check of the write has passed too: a write refused (409
// here, or 403 for a full logical partition) leaves the transaction as it
// was, which a stored procedure that catches the error commits. A key
// whose tuple the write leaves unchanged costs no lookup.
//
// It returns a 409 naming the key's paths when another item of the logical
// partition has new's values at them.
func (t *lpTxn) checkUnique(id string, old, new []byte) ([]uniqueCheck, error) {
	keys := t.c.UniqueKeySegments()
	if len(keys) == 0 {
		return nil, nil
	}
	var po, pn fastjson.Parser
	var ov, nv *fastjson.Value
	var err error
	if old != nil {
		if ov, err = po.ParseBytes(old); err != nil {
			return nil, translate(fmt.Errorf("stored item %q: %w", id, err))
		}
	}
	if new != nil {
		if nv, err = pn.ParseBytes(new); err != nil {
			return nil, translate(fmt.Errorf("item %q: %w", id, err))
		}
	}
	var plan []uniqueCheck
	for i, segs := range keys {
		var was, is []byte
		if ov != nil {
			was = appendTuple(nil, ov, segs)
		}
		if nv != nil {
			is = appendTuple(nil, nv, segs)
		}
		if ov != nil && nv != nil && bytes.Equal(was, is) {
			continue
		}
		var u uniqueCheck
		if ov != nil {
			u.drop = uniqueKey(uint16(i), t.epk, t.pkEnc, was)
		}
		if nv != nil {
			u.set = uniqueKey(uint16(i), t.epk, t.pkEnc, is)
			holder, err := t.entryHolder(u.set)
			if err != nil {
				return nil, err
			}
			if holder != "" && holder != id {
				taken, err := t.holds(holder, segs, is)
				if err != nil {
					return nil, err
				}
				if taken {
					return nil, uniqueConflict(t.c.UniqueKeys()[i])
				}
			}
		}
		plan = append(plan, u)
	}
	return plan, nil
}

// applyUnique writes the unique key entry changes checkUnique planned for
// item id.
func (t *lpTxn) applyUnique(id string, plan []uniqueCheck) error {
	for _, u := range plan {
		if u.drop != nil {
			holder, err := t.entryHolder(u.drop)
			if err != nil {
				return err
			}
			if holder == id {
				t.b.Delete(u.drop)
			}
		}
		if u.set != nil {
			t.b.Set(u.set, []byte(id))
		}
	}
	return nil
}

// entryHolder returns the id a unique key entry names, or "" when there is
// no entry.
func (t *lpTxn) entryHolder(key []byte) (string, error) {
	v, err := t.b.Get(key)
	switch {
	case errors.Is(err, replica.ErrNotFound):
		return "", nil
	case err != nil:
		return "", translate(err)
	}
	return string(v), nil
}

// holds reports whether item id is visible to the transaction and has tuple
// at the paths segs.
func (t *lpTxn) holds(id string, segs [][]string, tuple []byte) (bool, error) {
	stored, _, exists, err := t.load(id)
	if err != nil || !exists {
		return false, err
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(stored)
	if err != nil {
		return false, translate(fmt.Errorf("stored item %q: %w", id, err))
	}
	return bytes.Equal(appendTuple(nil, v, segs), tuple), nil
}

// uniqueConflict is the 409 for a write that would give two items of a
// logical partition the same values at a unique key's paths.
func uniqueConflict(paths []string) *status.Error {
	return status.Newf(http.StatusConflict,
		"Unique index constraint violation: another item in this logical partition has the same values at the unique key paths (%s)",
		strings.Join(paths, ", "))
}

// uniqueEntries sets the unique key entries of one stored item, for a
// rebuild. Where stored items share a tuple (written before the policy was
// enforced), the last one in key order gets the entry; checkUnique still
// refuses a new item with that tuple (holds).
func (e *Engine) uniqueEntries(c *catalog.Container) entryFunc {
	keys := c.UniqueKeySegments()
	return func(b replica.Batch, key []byte, _ uint64, item []byte) error {
		ik, err := decodeItemKey(key)
		if err != nil {
			return err
		}
		var p fastjson.Parser
		v, err := p.ParseBytes(item)
		if err != nil {
			return err
		}
		for i, segs := range keys {
			b.Set(uniqueKey(uint16(i), ik.EPK, ik.PK, appendTuple(nil, v, segs)), []byte(ik.ID))
		}
		return nil
	}
}

// Tuple encoding: each path's value in turn, by a type tag and a canonical
// body, so equal values (by Cosmos DB's comparison: numbers by value,
// strings exactly, objects regardless of member order) encode equally and
// unequal ones differently. A missing value encodes as null: Cosmos DB
// treats it so for unique keys.
const (
	tagEnd    = 0x00 // ends an array or object
	tagNull   = 0x01
	tagFalse  = 0x02
	tagTrue   = 0x03
	tagNumber = 0x04 // + 8 bytes: the float64's bits, -0 as 0
	tagString = 0x05 // + escaped bytes + 0x00 0x01
	tagArray  = 0x06 // + elements + tagEnd
	tagObject = 0x07 // + (tagMember, escaped key, value) by key order + tagEnd
	tagMember = 0x08
	tagRawNum = 0x09 // + escaped literal: a number that is not a finite double
)

// appendTuple appends the encoding of the values of doc at each of paths.
func appendTuple(dst []byte, doc *fastjson.Value, paths [][]string) []byte {
	for _, segs := range paths {
		dst = appendUniqueValue(dst, valueAtPath(doc, segs))
	}
	return dst
}

// valueAtPath returns the value at segs, descending through objects only
// (as partition key paths do), or nil when there is none. Where a key
// repeats, the last occurrence counts.
func valueAtPath(v *fastjson.Value, segs []string) *fastjson.Value {
	for _, s := range segs {
		o, err := v.Object()
		if err != nil {
			return nil
		}
		v = nil
		o.Visit(func(k []byte, m *fastjson.Value) {
			if string(k) == s {
				v = m
			}
		})
		if v == nil {
			return nil
		}
	}
	return v
}

func appendUniqueValue(dst []byte, v *fastjson.Value) []byte {
	if v == nil {
		return append(dst, tagNull)
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return append(dst, tagNull)
	case fastjson.TypeFalse:
		return append(dst, tagFalse)
	case fastjson.TypeTrue:
		return append(dst, tagTrue)
	case fastjson.TypeNumber:
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return appendUniqueString(append(dst, tagRawNum), v.MarshalTo(nil))
		}
		if f == 0 {
			f = 0 // -0 → 0
		}
		return binary.BigEndian.AppendUint64(append(dst, tagNumber), math.Float64bits(f))
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return appendUniqueString(append(dst, tagString), s)
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, tagArray)
		for _, e := range a {
			dst = appendUniqueValue(dst, e)
		}
		return append(dst, tagEnd)
	case fastjson.TypeObject:
		o, _ := v.Object()
		type member struct {
			k []byte
			v *fastjson.Value
		}
		ms := make([]member, 0, o.Len())
		o.Visit(func(k []byte, m *fastjson.Value) { ms = append(ms, member{k, m}) })
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.k, b.k) })
		dst = append(dst, tagObject)
		for j, m := range ms {
			if j+1 < len(ms) && bytes.Equal(ms[j+1].k, m.k) {
				continue // the last occurrence of a key counts
			}
			dst = appendUniqueValue(appendUniqueString(append(dst, tagMember), m.k), m.v)
		}
		return append(dst, tagEnd)
	}
	return append(dst, tagNull)
}

// appendUniqueString appends s with 0x00 escaped as 0x00 0xFF, then 0x00 0x01.
func appendUniqueString(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			break
		}
		dst = append(append(dst, s[:i]...), 0x00, 0xFF)
		s = s[i+1:]
	}
	return append(append(dst, s...), 0x00, 0x01)
}

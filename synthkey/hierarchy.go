package synthkey

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// MaxLevels is the most levels of a hierarchical partition key in Cosmos
// DB.
const MaxLevels = 3

// Level is one level of a hierarchical partition key: an item property
// used as it is (Path), or a synthetic key written to its Target (Key).
// Exactly one of the two is set.
type Level struct {
	Path string
	Key  *Key
}

// Hierarchy is a hierarchical partition key (Cosmos DB's MultiHash kind):
// two or three levels, say /tenantId then /userId. The logical partition
// is the whole tuple of values, and the 20 GB limit applies to it, so a
// tenant larger than 20 GB is fine as long as each of its users fits; a
// query naming the first level (or the first two) is routed to the
// physical partitions holding that prefix rather than to all.
//
// A plain level keeps its JSON type (Cosmos DB keys the number 17 and the
// string "17" apart); a synthetic level is a string. Create the container
// with Definition. A Hierarchy is immutable and safe for concurrent use.
type Hierarchy struct {
	levels []level
}

type level struct {
	path path // the level's path in the container's definition
	key  *Key // nil for a plain property
}

// NewHierarchy returns the hierarchical key of levels, 2 to MaxLevels of
// them. Errors: a *PathError wrapping ErrInvalidPath for a bad path or two
// levels at overlapping paths, or one wrapping ErrInvalidConfig for a
// wrong count or a Level with both or neither of Path and Key.
func NewHierarchy(levels ...Level) (*Hierarchy, error) {
	if len(levels) < 2 || len(levels) > MaxLevels {
		return nil, fmt.Errorf("%w: a hierarchical key has 2 to %d levels, not %d", ErrInvalidConfig, MaxLevels, len(levels))
	}
	h := &Hierarchy{}
	for i, l := range levels {
		var lv level
		switch {
		case (l.Path == "") == (l.Key == nil):
			return nil, fmt.Errorf("%w: level %d needs exactly one of Path and Key", ErrInvalidConfig, i+1)
		case l.Key != nil:
			lv = level{path: l.Key.target, key: l.Key}
		default:
			p, err := parsePath(l.Path)
			if err != nil {
				return nil, err
			}
			lv = level{path: p}
		}
		for _, o := range h.levels {
			if overlaps(o.path, lv.path) {
				return nil, &PathError{Path: lv.path.text, Err: ErrInvalidPath}
			}
		}
		h.levels = append(h.levels, lv)
	}
	// A synthetic level must not be written over another synthetic level's
	// input.
	for _, l := range h.levels {
		for _, o := range h.levels {
			if l.key == nil || o.key == nil || o.key == l.key {
				continue
			}
			srcs := append(append([]path{}, o.key.paths...), o.key.hashPaths...)
			if o.key.time != nil {
				srcs = append(srcs, o.key.time.path)
			}
			for _, src := range srcs {
				if overlaps(src, l.path) {
					return nil, &PathError{Path: l.path.text, Err: ErrInvalidPath}
				}
			}
		}
	}
	return h, nil
}

// Paths returns the levels' paths, the container's partition key paths.
func (h *Hierarchy) Paths() []string {
	out := make([]string, len(h.levels))
	for i, l := range h.levels {
		out[i] = l.path.text
	}
	return out
}

// Definition returns the container's partition key definition: kind
// MultiHash, version 2, Paths.
func (h *Hierarchy) Definition() azcosmos.PartitionKeyDefinition {
	return azcosmos.PartitionKeyDefinition{Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2, Paths: h.Paths()}
}

// Values returns the first n levels' values of an item with props (n from
// 1 to the number of levels; fewer is a prefix): a string, float64 or bool
// for a plain level as the item holds it, the synthetic key (its PointKey)
// for a synthetic level. Errors are as for Key.Base, ErrRandomSuffix for a
// random-suffix level, or ErrInvalidConfig for n out of range.
func (h *Hierarchy) Values(props map[string]any, n int) ([]any, error) {
	if n < 1 || n > len(h.levels) {
		return nil, fmt.Errorf("%w: %d levels of %d", ErrInvalidConfig, n, len(h.levels))
	}
	out := make([]any, n)
	for i, l := range h.levels[:n] {
		var err error
		if l.key != nil {
			out[i], err = l.key.PointKey(props)
		} else {
			out[i], err = l.path.scalar(props)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PartitionKey returns the first n levels of an item with props as the
// SDK's partition key: all levels for a point read or a single-partition
// query, fewer for a query targeted to a prefix (as Cosmos DB routes it to
// the prefix's physical partitions). Errors are as for Values.
func (h *Hierarchy) PartitionKey(props map[string]any, n int) (azcosmos.PartitionKey, error) {
	vs, err := h.Values(props, n)
	if err != nil {
		return azcosmos.PartitionKey{}, err
	}
	return partitionKeyOf(vs), nil
}

func partitionKeyOf(vs []any) azcosmos.PartitionKey {
	pk := azcosmos.NewPartitionKey()
	for _, v := range vs {
		switch v := v.(type) {
		case string:
			pk = pk.AppendString(v)
		case bool:
			pk = pk.AppendBool(v)
		case float64:
			pk = pk.AppendNumber(v)
		}
	}
	return pk
}

// Apply computes every synthetic level of item (drawing new buckets for
// random suffixes) and sets each at its Target, then returns the item's
// whole partition key. On error item is unchanged; errors are as for
// Key.Apply and Values.
//
// NB: as for Key.Apply, replacing an item with a random-suffix level must
// reuse its stored key.
func (h *Hierarchy) Apply(item map[string]any) (azcosmos.PartitionKey, error) {
	if item == nil {
		return azcosmos.PartitionKey{}, &PathError{Path: "", Err: ErrNotObject}
	}
	vs := make([]any, len(h.levels))
	for i, l := range h.levels {
		var err error
		if l.key == nil {
			vs[i], err = l.path.scalar(item)
		} else {
			bucket := 0
			if l.key.suffix == SuffixRandom {
				bucket = l.key.drawBucket()
			}
			var b []byte
			b, err = l.key.compute(nil, item, bucket)
			vs[i] = string(b)
		}
		if err != nil {
			return azcosmos.PartitionKey{}, err
		}
	}
	// Check every target before setting any, so a failure changes nothing.
	for _, l := range h.levels {
		if l.key != nil {
			if err := l.path.check(item); err != nil {
				return azcosmos.PartitionKey{}, err
			}
		}
	}
	for i, l := range h.levels {
		if l.key != nil {
			if err := l.path.set(item, vs[i].(string)); err != nil {
				return azcosmos.PartitionKey{}, err
			}
		}
	}
	return partitionKeyOf(vs), nil
}

// Prepare applies the key to item (see Apply) and returns what
// ContainerClient.CreateItem, UpsertItem and ReplaceItem take: the
// partition key and the item marshalled as JSON.
func (h *Hierarchy) Prepare(item map[string]any) (azcosmos.PartitionKey, []byte, error) {
	pk, err := h.Apply(item)
	if err != nil {
		return azcosmos.PartitionKey{}, nil, err
	}
	body, err := json.Marshal(item)
	if err != nil {
		return azcosmos.PartitionKey{}, nil, fmt.Errorf("synthkey: marshal item: %w", err)
	}
	return pk, body, nil
}

// scalar returns the value at p in item as a partition key component: a
// string, bool, or float64 (any Go number or json.Number, within ±2^53).
// Errors are *PathError values as for Key.Base.
func (p path) scalar(item map[string]any) (any, error) {
	v, ok := p.lookup(item)
	if !ok {
		return nil, &PathError{Path: p.text, Err: ErrMissing}
	}
	switch v := v.(type) {
	case string, bool:
		return v, nil
	case float64:
		if _, err := appendFloat(nil, v, 64); err != nil {
			return nil, &PathError{Path: p.text, Err: err}
		}
		return v, nil
	}
	// Other numbers: through their canonical string, which checks range.
	s, err := Canonical(v)
	if err != nil {
		return nil, &PathError{Path: p.text, Err: err}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, &PathError{Path: p.text, Err: ErrUnsupportedType}
	}
	return f, nil
}

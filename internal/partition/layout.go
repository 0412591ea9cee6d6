package partition

import (
	"bytes"
	"math/big"
	"math/bits"
	"sort"
	"strconv"
	"sync/atomic"
)

// EvenBoundaries returns the n-1 interior boundaries, in increasing order, that
// split the EPK space of definition d into n ranges of equal hash width; nil
// when n <= 1.
//
// For V2 and MultiHash the first 16 bytes of an EPK lie in
// [0, M] with M = 0x3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF (the top two bits are
// always cleared), and boundary i is floor(i*M/n) as 16 big-endian bytes; for
// n = 2 that is 1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF, the split point Cosmos uses
// (protocol doc §5.4).
//
// For V1 (d.Kind Hash, d.Version 1) an EPK starts with the binary encoding of
// the murmur3_32 hash as a number, and boundary i is the binary encoding of
// floor(i*2^32/n): a V1 EPK sorts at or after boundary i exactly when its hash
// is at least that value. Boundaries strictly increase for n up to 2^32. Any
// other definition is treated as V2.
func EvenBoundaries(d Definition, n int) []EPK {
	if n <= 1 {
		return nil
	}
	out := make([]EPK, 0, n-1)
	if d.scheme() == schemeV1 {
		for i := 1; i < n; i++ {
			// floor(i*2^32/n) in 128-bit arithmetic; Div64 cannot panic as
			// the high word i>>32 is below n.
			hi, lo := bits.Mul64(uint64(i), 1<<32)
			h, _ := bits.Div64(hi, lo, uint64(n))
			out = append(out, appendNumberV1(nil, float64(h)))
		}
		return out
	}
	space := new(big.Int).Lsh(big.NewInt(1), 126)
	space.Sub(space, big.NewInt(1))
	bn := big.NewInt(int64(n))
	for i := 1; i < n; i++ {
		b := new(big.Int).Mul(space, big.NewInt(int64(i)))
		b.Quo(b, bn)
		out = append(out, b.FillBytes(make(EPK, v2Len)))
	}
	return out
}

// InitialLayout returns the n ranges of a new container, with ids "0" to
// "n-1", no parents, and the boundaries of [EvenBoundaries]: the first starts
// at the empty EPK and the last ends at FF. n < 1 is treated as 1.
func InitialLayout(d Definition, n int) []Range {
	n = max(n, 1)
	bounds := EvenBoundaries(d, n)
	out := make([]Range, n)
	lo := EPK{}
	for i := range out {
		hi := MaxEPK()
		if i < len(bounds) {
			hi = bounds[i]
		}
		out[i] = Range{ID: strconv.Itoa(i), Min: lo, Max: hi}
		lo = hi
	}
	return out
}

// InitialRangeCount returns how many physical partitions Cosmos DB gives a new
// container: ceil(manualRU/6000) when manualRU > 0, otherwise
// ceil(autoscaleMaxRU/10000) (autoscale, or a container in a database with
// shared throughput: pass the database's throughput as autoscaleMaxRU), and
// always at least 1.
func InitialRangeCount(manualRU, autoscaleMaxRU int) int {
	switch {
	case manualRU > 0:
		return max(1, ceilDiv(manualRU, 6000))
	case autoscaleMaxRU > 0:
		return max(1, ceilDiv(autoscaleMaxRU, 10000))
	}
	return 1
}

func ceilDiv(a, b int) int { return (a-1)/b + 1 }

// Midpoint returns the EPK halfway between lo and hi in hash space, for
// splitting the range [lo, hi) of definition d into two of equal width; it
// is false when the range cannot be halved (V1 definitions, or a range one
// hash wide). For V2 and MultiHash an EPK's position is its first 16 bytes
// as a big-endian number; the empty EPK is 0 and FF is 2^126-1, the end of
// the space as EvenBoundaries counts it (so halving the whole space gives
// Cosmos's split point 1FFF…F).
func Midpoint(d Definition, lo, hi EPK) (EPK, bool) {
	if d.scheme() == schemeV1 {
		return nil, false
	}
	pos := func(e EPK) *big.Int {
		if len(e) == 1 && e[0] == 0xFF {
			m := new(big.Int).Lsh(big.NewInt(1), 126)
			return m.Sub(m, big.NewInt(1))
		}
		b := make([]byte, v2Len)
		copy(b, e)
		return new(big.Int).SetBytes(b)
	}
	a, b := pos(lo), pos(hi)
	mid := new(big.Int).Add(a, b)
	mid.Rsh(mid, 1)
	if mid.Cmp(a) <= 0 || mid.Cmp(b) >= 0 {
		return nil, false
	}
	out := EPK(mid.FillBytes(make([]byte, v2Len)))
	if !(Range{Min: lo, Max: hi}).Contains(out) || bytes.Equal(out, lo) {
		return nil, false
	}
	return out, true
}

// Slice returns which of the n ranges of equal hash width that
// [EvenBoundaries] makes of definition d's EPK space holds e: the number of
// those boundaries at or before e, from 0 to n-1. A database with shared
// throughput gives each such slice a budget of its own, drawn on by the
// physical partitions of its containers that start in it
// (docs/request-units.md). n < 1 is treated as 1.
func (d Definition) Slice(n int, e EPK) int {
	if n <= 1 {
		return 0
	}
	b := evenBoundariesCached(d, n)
	return sort.Search(len(b), func(i int) bool { return bytes.Compare(b[i], e) > 0 })
}

// SliceStart returns the first EPK of slice s of n (see Slice): the empty
// EPK for the first, the boundary before it for the others, nil for an s
// out of range.
func (d Definition) SliceStart(n, s int) EPK {
	switch {
	case s == 0:
		return EPK{}
	case s < 0 || s >= n:
		return nil
	}
	return evenBoundariesCached(d, n)[s-1]
}

// boundaryCache keeps the boundaries Slice computed, by scheme and count:
// computing them takes big-number arithmetic, and Slice runs on every
// request of a container that shares its database's throughput. The map is
// never changed once published (a miss publishes a copy), so a hit takes
// no lock.
var boundaryCache atomic.Pointer[map[boundaryKey][]EPK]

type boundaryKey struct {
	s scheme
	n int
}

// boundaryCacheMax bounds the cache: each offer's throughput gives one
// count, so a few entries serve an account; past the bound it starts over.
const boundaryCacheMax = 64

func evenBoundariesCached(d Definition, n int) []EPK {
	k := boundaryKey{d.scheme(), n}
	if k.s != schemeV1 {
		k.s = schemeV2 // EvenBoundaries treats every other scheme as V2
	}
	old := boundaryCache.Load()
	if old != nil {
		if b, ok := (*old)[k]; ok {
			return b
		}
	}
	b := EvenBoundaries(d, n)
	m := map[boundaryKey][]EPK{k: b}
	if old != nil && len(*old) < boundaryCacheMax {
		for k, v := range *old {
			m[k] = v
		}
	}
	boundaryCache.Store(&m) // a racing miss may drop another's entry: it is computed again
	return b
}

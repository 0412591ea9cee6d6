// Package index decides which (path, value) terms of a JSON document a
// Cosmos DB indexing policy indexes, encodes them as order-preserving bytes,
// and computes the term spans a planner scans for equality, range, IN and
// STARTSWITH predicates on one path. It does not touch storage: the engine
// builds index keys as 0x04 | term | seq inside a partition's keyspace
// (engine/keys.go) and scans the spans returned here.
//
// # Terms
//
// A term is an encoded path followed by an encoded scalar value:
//
//	term    = segment* 0x00 0x02 value
//	segment = esc(name) 0x00 0x01          esc: 0x00 → 0x00 0xFF
//	value   = 0x02                         null
//	        | 0x03 (0x00 | 0x01)           false | true
//	        | 0x04 f(num)                  8 bytes, order-preserving float64
//	        | 0x05 esc(str) 0x00 0x01      string of at most StringTermBytes bytes
//	        | 0x05 esc(str[:N]) 0x00 0x03 h(str)
//	                                       longer string (N = StringTermBytes): a bounded
//	                                       term; h: 8-byte xxhash of the whole string
//
// The encoding has three properties the engine relies on:
//
//   - For a fixed path, bytes.Compare of two terms agrees with Cosmos DB's
//     comparison order of their values: null < false < true < numbers <
//     strings, numbers numerically (-0 == 0), strings by Unicode code point
//     (which is UTF-8 byte order). Undefined, arrays and objects are never
//     terms. The one exception: strings longer than StringTermBytes that
//     share their first StringTermBytes bytes form one bucket of bounded
//     terms (they share the term's bytes up to the hash), ordered by hash
//     among themselves. Equality finds a long string by its hash (the
//     filter re-checks a collision); ranges and prefixes take whole buckets
//     as candidates; an ordered read sorts a bucket's entries by their
//     documents' full values.
//   - Terms are self-delimiting: no term is a proper prefix of another, so
//     bytes appended after a term (the engine's 8-byte ridSeq) never change
//     the order between different terms, and the terms of two different
//     paths never interleave (after a segment terminator the next two bytes
//     are either a new segment or the end-of-path marker 0x00 0x02, which no
//     segment can start with).
//   - Values are typed by their tag byte, so all terms of one type on one path
//     form one contiguous span: a range predicate is bounded to the type of
//     its literal, as Cosmos DB's comparisons are (c.x > 5 matches numbers
//     only; comparing across types is undefined).
//
// Policy.Terms lists the terms of a document; Policy.Diff lists the terms
// that two versions of a document do not share, which is what an update
// changes in the index.
//
// # Composite terms
//
// Policy.CompositeTerms gives a document's one term per composite index of
// the policy: the index's number, then each path's value in ORDER BY order
// (undefined, arrays and objects included; a descending path's bytes
// complemented), so that byte order is the order of an ORDER BY on the
// composite's paths. Arrays, objects and long strings keep only part of
// their value: CompositeRun says where the terms stop telling values apart
// (composite.go, docs/composite-indexes.md).
//
// # Paths
//
// A path is a list of unescaped property names from the document root. An
// array element contributes its position as a decimal string ("0", "1", …)
// and, in a second term, the wildcard segment "[]" that stands for any
// element (so ARRAY_CONTAINS and JOIN can use the index). For a leaf below
// several arrays exactly two terms are emitted: the concrete path and the
// path with every position replaced by "[]"; mixed forms such as
// ["a","0","b","[]"] are not. NB: a position and a property whose name is the
// same decimal string (["t","0"] from {"t":["x"]} and from {"t":{"0":"x"}})
// share a term, as does a property literally named "[]" with the wildcard; a
// planner must treat such index hits as candidates and re-check the filter,
// must not read such a path in index order for an ORDER BY, and does not look
// up a property named "[]" at all (query/plan: walkPath, positional).
//
// # Policies
//
// Policy is a parsed indexingPolicy (ParsePolicy, DefaultPolicy). It decides
// per concrete path whether the scalar there is indexed: among the included
// and excluded paths that match, the most specific one wins (Cosmos DB's
// precedence), where more segments beat fewer, "/?" beats "/*" at the same
// depth, and a named segment beats "[]"; on an exact tie excluded wins. The
// system properties _rid, _self, _etag and _attachments at the top level are
// never indexed; id and _ts are, when the policy covers them.
//
// A Policy is immutable after parsing and safe for concurrent use.
package index

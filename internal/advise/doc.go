// Package advise recommends a partition key for a Cosmos DB (or Partita)
// container from a sample of its items and, optionally, a description of
// its workload. It backs `partita advise`.
//
// An Analyzer takes in items (ReadLines for a JSON-lines file or a JSON
// array, Add for one item, Live.Sample for a live container read through
// the official SDK),
// then Analyze evaluates candidate keys and returns a Report, ranked best
// first, that explains its recommendation in plain words. The package
// imports no other Partita package; it reaches a server only through the
// SDK and Partita's signed admin endpoint (Live.Partitions).
//
// # Candidates
//
//   - every scalar property path of the sample ("/a/b", a property named
//     "a/b" being "/a~1b" as in JSON Pointer; strings, numbers, booleans),
//     except Cosmos DB's system properties (_rid, _ts, …) and, unless a
//     query filters on them, measurements (fractional numbers with many
//     values) and payload (strings over 128 bytes on average), listed in
//     Report.NotKeys;
//   - concatenations of two paths ("/deviceId-/date", synthkey.Concat),
//     among the best Options.PairPaths single paths and the workload's
//     filter paths, leaving out constants and near-unique paths;
//   - an entity with a time bucket of the time path when that is finer than
//     a day ("/deviceId-day(/ts)", synthkey.Config.Time): the coarsest of
//     month, day and hour whose largest logical partition stays within half
//     the limit, the bucket holding its key's writes (at the stated rate)
//     for the bucket's length;
//   - hierarchical keys (Cosmos DB's MultiHash, synthkey.NewHierarchy) of
//     two levels, coarse then fine ("[/tenantId, /userId]"), where queries
//     name the first level without the second (or, without queries, where
//     the first level alone passes half the limit: a whale), and of three
//     when the two-level leaf still passes half of it; and the container's
//     current key, whatever its kind;
//   - for hot paths (one value holds ≥ 5% of the items, or ≥ 20% of a
//     write window's writes): the value plus a random suffix 1..N
//     ("/date.random(100)", synthkey.RandomSuffix), and the value plus a
//     suffix computed from a hash of another path ("/date.hash(/vin,100)",
//     synthkey.HashSuffix, with synthkey's FNV-1a bucket) for the two
//     highest-cardinality paths and every path queried with the value.
//
// Values keep their JSON type as Cosmos DB keys them: the number 17 and the
// string "17" are two logical partitions of a single or hierarchical key,
// but one value of a synthetic (string) key. A missing, array or object
// value leaves the item without a key: such items are counted as one
// logical partition (Cosmos DB's "none" partition key, the undefined
// value) and in Candidate.Missing. Null is a value of a single or
// hierarchical key, as in Cosmos DB: its items share the logical partition
// of null (rendered null), apart from those without the property (a
// hierarchical key's missing level is its Undefined component, rendered
// {}). A synthetic key cannot take null (synthkey.ErrNull), so there null
// counts as missing.
//
// # Measures
//
// Per candidate: distinct values, the largest logical partition's share
// of items and bytes, its projected size (share × the data set's size;
// a key unique in the sample is projected at one item) against the 20 GB
// logical partition limit (for a hierarchical key, the whole tuple's; its
// largest first level is reported too, with the 50 GB physical partitions
// it spans), the write skew, the hottest key's RU/s, and the share of the
// workload's query weight that stays single-partition (its equality
// filters name every path of the key and, for a hash suffix, every hashed
// path; never for a random suffix) or, for a hierarchical key, is
// targeted by a prefix (it names the first levels).
//
// Writes are judged at one moment: within a second, all writes share the
// time path's value unless its resolution (measured from its values:
// a day for dates, a second, a millisecond) is finer, when they spread
// over the second's values; time buckets and other date paths are
// likewise constant. The write skew is, per write window of the time path,
// the share of the window's writes its hottest key takes at a moment (a
// date key scores 100%; unique millisecond timestamps a few percent).
//
// The hottest key's RU/s is its share of the rate the workload states
// (writes.perSecond × RU per write) or, live, of the measured request
// rate; the sample never sets the rate, and a key seen once in a window is
// not taken to get one write per window. The share is pooled over the
// key's lifetime (its first to last window); keys with fewer than 10
// sampled writes are not told apart from the even share over an estimated
// number of keys written at a time (Chao1, capped by the window's real
// writes); a 95% interval is stated (Candidate.HotKeyRULow, HotKeyRUHigh,
// HotKeyBasis).
//
// # Score
//
// Three parts in 0..1:
//
//	spread       = log(1/largest share of items) / log(min(1000, items))
//	write spread = per window, log(1/hottest share) / log(min(100, window's items)),
//	               averaged over the windows weighted by their writes
//	query fit    = single-partition share + 0.9 × prefix-targeted share
//
// score = 100 × (0.30 spread + 0.35 write spread + 0.35 query fit) / (sum
// of the weights of the parts measured: without a time path or a workload
// the others carry the score), × (1 − missing share), × 0.1 if the largest
// logical partition would pass the limit (× 0.8 past half of it), × 0.1 if
// the hottest key would need more than 10,000 RU/s; 0 for a constant. Ties
// go to the simpler strategy (single, concat, hierarchical, hash suffix,
// random suffix).
//
// # Live
//
// Live samples a container spread over its physical partitions and reads
// Partita's partition report; HotNow compares two reports taken a window
// apart to name the keys hot now (throttled in the window, or taking half
// their partition's RU in it, at a minimum rate).
//
// # Workload file
//
// JSON; every field is optional:
//
//	{
//	  "queries": [
//	    {"name": "readings of a VIN on a day", "filters": ["/vin", "/date"], "weight": 10},
//	    {"name": "a day's readings", "filters": ["/date"], "weight": 1}
//	  ],
//	  "writes": {"timePath": "/ts", "window": "1h", "perSecond": 2000, "ruPerWrite": 6}
//	}
//
// filters are the paths a query compares by equality ("day(/ts)", or hour
// or month, for a time range within one bucket of /ts; a filter on /ts
// itself names its buckets too); weight is its share of the traffic in any
// unit (default 1). writes.timePath holds each item's write time (RFC
// 3339, a date, or epoch seconds/milliseconds; default: detected from
// string timestamps, else /_ts), window is the skew window (default 24h),
// perSecond the container's peak write rate, and ruPerWrite a write's
// charge (default estimated from the item size).
//
// The input is JSON lines, or one JSON array of items (ReadLines).
package advise

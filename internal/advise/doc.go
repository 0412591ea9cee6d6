// Package advise recommends a partition key for a Cosmos DB (or Partita)
// container from a sample of its items and, optionally, a description of
// its workload. It backs `partita advise`.
//
// An Analyzer takes in items (ReadLines for a JSON-lines file, Add for one
// item, Live.Sample for a live container read through the official SDK),
// then Analyze evaluates candidate keys and returns a Report, ranked best
// first, that explains its recommendation in plain words. The package
// imports no other Partita package; it reaches a server only through the
// SDK and Partita's signed admin endpoint (Live.Partitions).
//
// # Candidates
//
//   - every scalar property path of the sample ("/a/b"; strings, numbers,
//     booleans), except Cosmos DB's system properties (_rid, _ts, …);
//   - concatenations of two paths ("/deviceId-/date", synthkey.Concat),
//     among the best Options.PairPaths single paths and the workload's
//     filter paths, leaving out constants and near-unique paths;
//   - for hot paths (one value holds ≥ 5% of the items, or ≥ 20% of a
//     write window's writes): the value plus a random suffix 1..N
//     ("/date.random(100)", synthkey.RandomSuffix), and the value plus a
//     suffix computed from a hash of another path ("/date.hash(/vin,100)",
//     synthkey.HashSuffix, with synthkey's FNV-1a bucket) for the two
//     highest-cardinality paths and every path queried with the value.
//
// A missing, null, array or object value leaves the item without a key:
// such items are counted as one logical partition (Cosmos DB's "none"
// partition key) and in Candidate.Missing.
//
// # Measures
//
// Per candidate: distinct values, the largest logical partition's share
// of items and bytes, its projected size (share × the data set's size;
// a key unique in the sample is projected at one item) against the 20 GB
// logical partition limit, the write skew (per write window of the time
// path, the share of the window's writes going to its hottest key: a date
// key scores 100%), the hottest key's RU/s at the workload's peak write
// rate, and the share of the workload's query weight that stays
// single-partition (a query is single-partition when its equality filters
// name every base path of the key and, for a hash suffix, every hashed
// path; never for a random suffix).
//
// # Score
//
// Three parts in 0..1:
//
//	spread       = log(1/largest share of items) / log(min(1000, items))
//	write spread = per window, log(1/hottest share) / log(min(100, window's items)),
//	               averaged over the windows weighted by their writes
//	query fit    = single-partition share of the query weight
//
// score = 100 × (0.30 spread + 0.35 write spread + 0.35 query fit) / (sum
// of the weights of the parts measured: without a time path or a workload
// the others carry the score), × (1 − missing share), × 0.1 if the largest
// logical partition would pass the limit (× 0.8 past half of it), × 0.1 if
// the hottest key would need more than 10,000 RU/s; 0 for a constant. Ties
// go to the simpler strategy (single, concat, hash suffix, random suffix).
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
// filters are the paths a query compares by equality; weight is its share
// of the traffic in any unit (default 1). writes.timePath holds each
// item's write time (RFC 3339, a date, or epoch seconds/milliseconds;
// default: detected from string timestamps, else /_ts), window is the skew
// window (default 24h), perSecond the container's peak write rate, and
// ruPerWrite a write's charge (default estimated from the item size).
package advise

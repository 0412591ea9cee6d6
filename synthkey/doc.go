// Package synthkey builds synthetic partition keys for Azure Cosmos DB (and
// Partita) containers, for use with the official Go SDK, azcosmos.
//
// A container has one partition key path, e.g. "/partitionKey". When no
// single property spreads writes and serves reads well, the application
// writes a synthetic value there, made from the item (the three strategies
// of the Cosmos DB documentation, "Create a synthetic partition key"):
//
//   - Concatenation: "/deviceId" and "/date" give "dev7-2018-08-09"
//     (Concat, or Config with SuffixNone).
//   - Random suffix: a hot base such as a date gets a bucket 1..N drawn at
//     random, "2018-08-09.17" (RandomSuffix, SuffixRandom). Writes spread
//     over N logical partitions; every read must fan out over all N keys.
//   - Hash suffix: the bucket 1..N is computed from other properties, e.g.
//     date + "." + bucket(VIN) (HashSuffix, SuffixHash). Writes spread as
//     well, and a reader who knows the VIN recomputes the one key, so point
//     reads stay single-partition; a reader who knows only the date fans out.
//
// A Key (built by New from a Config) sets the key on an item before it is
// written (Apply, Prepare, ApplyJSON), computes it for a point read
// (PointKey) and lists the keys to fan out over (FanOutKeys). Query and
// ReadItem then run a query or a point read under many keys in parallel,
// with bounded concurrency, one merged Result (items and summed RU charge)
// and one error.
//
// Two more tools cover what a single string key cannot:
//
//   - Time buckets: Config.Time appends the hour, day or month of a
//     timestamp ("/deviceId" + day of "/ts" gives "dev7-2024-06-01"), so a
//     device writing past 20 GB over its life gets a new logical partition
//     each day (TimeBucket).
//   - Hierarchical keys: NewHierarchy makes Cosmos DB's MultiHash key of 2
//     or 3 levels, say /tenantId then /userId. The 20 GB limit applies to
//     each whole tuple, so a tenant may outgrow it, and a query naming only
//     the tenant is routed to that tenant's physical partitions rather than
//     to all (Hierarchy.PartitionKey with fewer levels gives the prefix). A
//     level is a plain property, keeping its JSON type, or a synthetic Key.
//
// Items are map[string]any as encoding/json decodes a JSON object (with or
// without Decoder.UseNumber); ApplyJSON takes raw JSON. Property paths use
// Cosmos DB's syntax, "/a/b": segments are property names, escaped as in
// JSON Pointer (RFC 6901): "~1" for "/" and "~0" for "~", so the property
// "a/b" is "/a~1b" (no array indexes).
//
// # Key format
//
//	key  = base [ suffixSeparator bucket ]
//	base = canonical(Paths[0]) separator canonical(Paths[1]) … [ separator timeBucket ]
//
// separator defaults to "-" and suffixSeparator to "."; bucket is written
// in decimal without padding, 1..N. Separators are not escaped inside
// values: "a-b"+"c" and "a"+"b-c" share a key, which only puts both items
// in the same logical partition.
//
// # Type rules
//
// Each property value becomes its canonical string:
//
//   - string: itself, unchanged (UTF-8; "" is allowed).
//   - boolean: "true" or "false".
//   - number: its value as an IEEE-754 double (as Cosmos DB and JavaScript
//     read JSON numbers; a json.Number is parsed so, a float32 is taken at
//     float32 precision as encoding/json writes it), printed as the shortest
//     decimal that reads back as the same double, in plain notation: no
//     exponent, no trailing ".0", "-" only for negatives, -0 as "0". So 17,
//     17.0 and 1.7e1 all give "17"; 0.5 gives "0.5"; 1e-7 gives
//     "0.0000001". Non-finite numbers and numbers of magnitude 2^53 or more
//     (integers no JSON client holds exactly) are refused with
//     ErrNumberRange. Prefer strings or integers: fractional numbers in a
//     key are legal but fragile across languages.
//   - a time bucket (Config.Time): the time's hour "2006-01-02T15", day
//     "2006-01-02" or month "2006-01" in UTC, from an RFC 3339 string (or
//     one without a zone, with a T or a space), a date, epoch seconds (or
//     milliseconds from 10^11 on) or a time.Time; anything else is
//     ErrNotTime.
//   - missing (or a value on the path that is not an object): ErrMissing.
//   - null: ErrNull. Object or array: ErrNotScalar. Any other Go type:
//     ErrUnsupportedType.
//
// Errors about a property are *PathError values naming the path and
// wrapping the sentinel, so errors.Is and errors.AsType both work.
//
// # Hash suffix
//
// The bucket of an item is computed from the canonical strings v1 … vk of
// its HashPaths, in order, so that any language can reproduce it:
//
//	input  = UTF-8 bytes of v1, then for each further value the byte 0x1F
//	         (ASCII unit separator) and that value's UTF-8 bytes
//	h      = FNV-1a 32-bit of input: h = 2166136261; for each byte b:
//	         h = (h XOR b) * 16777619 mod 2^32
//	bucket = (h mod N) + 1
//
// The same strings, separators and numbers are used in every version of
// this package: changing them would move existing items. In JavaScript:
// h = Math.imul(h ^ b, 16777619) >>> 0 over new TextEncoder().encode(…); in
// Python: h = ((h ^ b) * 16777619) & 0xFFFFFFFF over s.encode("utf-8").
//
// Test vectors (values as a JSON array of canonical strings; TestDocVectors
// checks this table):
//
//	values                        FNV-1a 32    N    bucket
//	[""]                          0x811c9dc5   100  62
//	["a"]                         0xe40c292c   100  21
//	["foobar"]                    0xbf9cf968   100  21
//	["1HGCM82633A004352"]         0x848a2802   20   3
//	["Zürich"]                    0xd7007f20   10   5
//	["17"]                        0x1aeb28b1   20   14
//	["true"]                      0x4db211e5   4    2
//	["0.5"]                       0x5480b4d2   100  43
//	["dev7","2018-08-09"]         0xdae7deb8   100  21
//
// So HashSuffix("/pk", 20, []string{"/vin"}, "/date") gives the item
// {"date":"2018-08-09","vin":"1HGCM82633A004352"} the key "2018-08-09.3",
// and an item whose hashed property is the number 17.0 the bucket of "17".
//
// # Fan-out
//
// Query runs a query once per key as a single-partition query (the SDK
// sends the key as the partition key, so the query text need not mention
// it); ReadItem point-reads one id under every key, ignoring 404s. At most
// FanOutOptions.Concurrency requests (default 8) are in flight. Rows are
// merged in key order; ORDER BY, TOP, DISTINCT and aggregates apply per key.
// The first failure cancels the rest and is returned as a *KeyError naming
// the key. A random-suffix write must therefore be read with
// ReadItem(ctx, c, k.FanOutKeys(props), id, nil), a hash-suffix one with a
// plain ContainerClient.ReadItem under k.PointKey(props).
package synthkey

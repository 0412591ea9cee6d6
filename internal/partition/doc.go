// Package partition owns Cosmos DB's effective partition key (EPK) hashing and
// the map of a container's physical partitions.
//
// A container's partition key [Definition] names one path (kind Hash, hash
// version 1 or 2) or up to three (kind MultiHash, always version 2).
// [Definition.Hash] turns a partition key value into its [EPK], byte-for-byte
// as the Cosmos DB service computes it (docs/cosmos-wire-protocol.md §5.2):
//
//   - V2: MurmurHash3_x64_128 over the encoded components, big-endian h2‖h1,
//     top two bits cleared: 16 bytes whose first byte is at most 0x3F.
//   - MultiHash: one V2 hash per component, concatenated (16 bytes each).
//   - V1: the order-preserving binary encoding of the double value of
//     MurmurHash3_x86_32 over the encoded components, followed by the binary
//     encoding of the (truncated) components. This is the service/.NET
//     algorithm, not the JS SDK's or the Go SDK's variants (§5.6).
//
// EPKs order as byte strings (bytes.Compare), which is exactly how Cosmos
// orders their upper-case hex strings. The EPK space is ["", FF): every EPK
// sorts before [MaxEPK].
//
// A [Map] is an immutable list of [Range]s (physical partitions) that tile the
// EPK space without gaps or overlaps; [EvenBoundaries] and [InitialLayout]
// build the equal-width layout of a new container, and [InitialRangeCount]
// says how many ranges Cosmos DB gives it.
//
// Everything here is pure computation and safe for concurrent use.
package partition

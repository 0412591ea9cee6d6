package document

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// EncodeRID returns the textual form of the binary resource id b: standard
// base64 with padding, '/' replaced by '-' (protocol §4.2), e.g. 8 bytes of a
// container become "2Ro5AKZvbAA=".
func EncodeRID(b []byte) string {
	buf := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(buf, b)
	for i, c := range buf {
		if c == '/' {
			buf[i] = '-'
		}
	}
	return string(buf)
}

// DecodeRID inverts EncodeRID. It returns an *InvalidError if s is not a
// textual RID. It does not check the length, which depends on the resource.
func DecodeRID(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(strings.ReplaceAll(s, "-", "/"))
	// Re-encoding refuses what the decoder skips or tolerates: '/', CR, LF.
	if err != nil || EncodeRID(b) != s {
		return nil, &InvalidError{Msg: fmt.Sprintf("resource id %q is not a valid RID", s)}
	}
	return b, nil
}

// ETag returns the _etag (and etag header) value for write sequence number
// seq of a catalog resource: ItemETag with owner 0, e.g.
// ETag(0x5ee81d9a3bc801db) = `"00000000-0000-0000-5ee8-1d9a3bc801db"`, quotes
// included. Distinct seqs give distinct etags.
func ETag(seq uint64) string { return ItemETag(0, seq) }

// ItemETag returns the _etag of an item written at sequence number seq
// (its keyspace's LSN) by the container whose internal id is owner: a
// quoted GUID-shaped string whose first 16 hex digits are owner and last
// 16 are seq, e.g. ItemETag(0x1f, 7) =
// `"00000000-0000-001f-0000-000000000007"`. A container created again
// under the same name starts its keyspace's LSNs again but has another
// owner, so no etag an item had is given to the item that takes its place
// (a stale If-Match must fail).
func ItemETag(owner, seq uint64) string {
	b := []byte(`"00000000-0000-0000-0000-000000000000"`)
	put := func(from, to int, v uint64) { // hex digits of v into b[from:to], right-aligned
		for i, shift := to-1, 0; i >= from; i-- {
			if b[i] == '-' {
				continue
			}
			b[i] = hexDigits[v>>shift&0xf]
			shift += 4
		}
	}
	put(1, 19, owner)
	put(20, 37, seq)
	return string(b)
}

// ETagSeq returns the sequence number an ETag or ItemETag was made from,
// or an error for an etag neither made.
func ETagSeq(etag string) (uint64, error) {
	_, seq, err := ParseETag(etag)
	return seq, err
}

// ParseETag returns the owner and sequence number an ETag or ItemETag was
// made from, or an error for an etag neither made.
func ParseETag(etag string) (owner, seq uint64, err error) {
	if len(etag) != 38 || etag[0] != '"' || etag[37] != '"' || etag[9] != '-' || etag[14] != '-' || etag[19] != '-' || etag[24] != '-' {
		return 0, 0, &InvalidError{Msg: fmt.Sprintf("etag %q was not made by this server", etag)}
	}
	for i := 1; i < 37; i++ {
		c := etag[i]
		var d uint64
		switch {
		case i == 9 || i == 14 || i == 19 || i == 24:
			continue
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c - 'a' + 10)
		default: // ItemETag writes lowercase hex only
			return 0, 0, &InvalidError{Msg: fmt.Sprintf("etag %q was not made by this server", etag)}
		}
		if i < 19 {
			owner = owner<<4 | d
		} else {
			seq = seq<<4 | d
		}
	}
	return owner, seq, nil
}

// ItemSelf returns an item's _self link, "dbs/{dbRID}/colls/{collRID}/docs/{docRID}/",
// from the textual RIDs of its database, container and itself.
func ItemSelf(dbRID, collRID, docRID string) string {
	return "dbs/" + dbRID + "/colls/" + collRID + "/docs/" + docRID + "/"
}

// IfMatchFails reports whether an If-Match precondition rejects a resource
// whose etag is etag: "" sets none, "*" accepts any existing resource.
func IfMatchFails(ifMatch, etag string) bool {
	return ifMatch != "" && ifMatch != "*" && ifMatch != etag
}

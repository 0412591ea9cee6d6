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
// seq: a quoted GUID-shaped string whose last 16 hex digits are seq, e.g.
// ETag(0x5ee81d9a3bc801db) = `"00000000-0000-0000-5ee8-1d9a3bc801db"`, quotes
// included. Distinct seqs give distinct etags.
func ETag(seq uint64) string {
	b := []byte(etagPrefix + "0000-000000000000\"")
	for i, shift := len(b)-2, 0; i >= len(etagPrefix); i-- {
		if b[i] == '-' {
			continue
		}
		b[i] = hexDigits[seq>>shift&0xf]
		shift += 4
	}
	return string(b)
}

// etagPrefix is the fixed start of every ETag.
const etagPrefix = `"00000000-0000-0000-`

// ETagSeq returns the sequence number an ETag was made from, or an error
// for an ETag ETag did not make.
func ETagSeq(etag string) (uint64, error) {
	if len(etag) != 38 || etag[:len(etagPrefix)] != etagPrefix || etag[24] != '-' || etag[37] != '"' {
		return 0, &InvalidError{Msg: fmt.Sprintf("etag %q was not made by this server", etag)}
	}
	var seq uint64
	for i := len(etagPrefix); i < 37; i++ {
		c := etag[i]
		switch {
		case i == 24:
			continue
		case '0' <= c && c <= '9':
			seq = seq<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			seq = seq<<4 | uint64(c-'a'+10)
		default: // ETag writes lowercase hex only
			return 0, &InvalidError{Msg: fmt.Sprintf("etag %q was not made by this server", etag)}
		}
	}
	return seq, nil
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

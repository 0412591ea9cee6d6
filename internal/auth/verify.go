package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"
)

// Access is what a verified request may do. The zero value means no access.
type Access int

const (
	// ReadOnly allows reads only: the request was signed with the read-only key, or carried
	// a verified AAD token with a read-only role.
	ReadOnly Access = iota + 1
	// ReadWrite allows everything: the request was signed with the master key, or carried an
	// AAD token accepted in emulator mode or verified with a read-write role.
	ReadWrite
	// Scoped allows what a resource token's Grant allows (Principal.Grant), and nothing
	// else: the caller checks the request against it.
	Scoped
)

// String returns "read-only", "read-write", "resource-scoped", or "none".
func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	case Scoped:
		return "resource-scoped"
	}
	return "none"
}

// Principal is what a verified request may do: its Access, and for a resource token
// (Access Scoped) the token's Grant.
type Principal struct {
	Access Access
	Grant  *Grant // non-nil exactly when Access is Scoped
	// Signed: a master token, whose signature covers the request's link
	// (Request.Link, else the path's own); a token of the other types
	// names no link.
	Signed bool
}

// DefaultMaxSkew is the allowed |x-ms-date - now| when Config.MaxSkew is zero; the service
// allows about 15 minutes (protocol doc §2.1).
const DefaultMaxSkew = 15 * time.Minute

// ErrNoMasterKey is returned by NewVerifier when Config.MasterKey is empty.
var ErrNoMasterKey = errors.New("auth: no master key")

// ErrNegativeSkew is returned by NewVerifier when Config.MaxSkew is negative.
var ErrNegativeSkew = errors.New("auth: negative max skew")

// Config configures a Verifier.
type Config struct {
	MasterKey   []byte        // decoded account key (see DecodeKey); required
	ReadOnlyKey []byte        // decoded read-only key; nil or empty means none
	MaxSkew     time.Duration // allowed |x-ms-date - now|; DefaultMaxSkew (15m) when zero
	AAD         AADConfig     // type=aad tokens; the zero value refuses them
}

// Verifier checks request authentication. Build it with NewVerifier; the zero value is not
// usable. A *Verifier is safe for concurrent use.
type Verifier struct {
	masterKey   []byte
	tokenKey    []byte // signs resource tokens; derived from masterKey (resource.go)
	readOnlyKey []byte // nil when there is none
	maxSkew     time.Duration
	aad         AADConfig
	states      sync.Pool // of *state; avoids per-request HMAC and buffer allocations
}

// state is per-call scratch space, pooled by a Verifier.
type state struct {
	master   hash.Hash // HMAC-SHA256 keyed with the master key
	readOnly hash.Hash // HMAC-SHA256 keyed with the read-only key; nil when none
	auth     []byte    // the percent-decoded Authorization header
	payload  []byte    // the string-to-sign
	dec      [48]byte  // the client's sig, decoded
	sum      [sha256.Size]byte
}

// maxPooledBuf bounds the buffers a pooled state keeps, so one huge request does not pin
// memory for the life of the pool.
const maxPooledBuf = 4 << 10

// NewVerifier returns a Verifier for c. It copies the keys and lists. It returns
// ErrNoMasterKey when c.MasterKey is empty, ErrNegativeSkew when c.MaxSkew < 0, and an error
// wrapping ErrBadAADConfig when c.AAD.Mode is AADVerified without keys, issuers or
// audiences.
func NewVerifier(c Config) (*Verifier, error) {
	if len(c.MasterKey) == 0 {
		return nil, ErrNoMasterKey
	}
	if c.MaxSkew < 0 {
		return nil, ErrNegativeSkew
	}
	if err := c.AAD.check(); err != nil {
		return nil, err
	}
	v := &Verifier{
		masterKey: bytes.Clone(c.MasterKey),
		tokenKey:  tokenKey(c.MasterKey),
		maxSkew:   c.MaxSkew,
		aad:       c.AAD.clone(),
	}
	if len(c.ReadOnlyKey) > 0 {
		v.readOnlyKey = bytes.Clone(c.ReadOnlyKey)
	}
	if v.maxSkew == 0 {
		v.maxSkew = DefaultMaxSkew
	}
	v.states.New = func() any {
		s := &state{master: hmac.New(sha256.New, v.masterKey)}
		if v.readOnlyKey != nil {
			s.readOnly = hmac.New(sha256.New, v.readOnlyKey)
		}
		return s
	}
	return v, nil
}

// Request is the part of an HTTP request that authentication looks at.
type Request struct {
	Method        string // HTTP verb, any case
	RawPath       string // URL.EscapedPath()
	Authorization string // Authorization header value, percent-encoded or raw
	Date          string // x-ms-date header (falling back to Date is the caller's job)
	// Link, when set, is the resource link a master key signature covers
	// in place of RawPath's: for a path of resource ids, the lower-cased
	// last of them, as the SDKs sign it (RawPath is then the path of names
	// it stands for, which still gives the resource type).
	Link string
}

// Verify returns the access r carries at time now: Authenticate's Principal.Access.
func (v *Verifier) Verify(r Request, now time.Time) (Access, error) {
	p, err := v.Authenticate(r, now)
	return p.Access, err
}

// Authenticate returns what r may do at time now, or the zero Principal and an *Error whose
// Reason says why it may do nothing:
//
//   - Missing: no Authorization header.
//   - Malformed: the header is not type=…&ver=1.0&sig=… (or, for AAD, not a JWT, or a
//     verified token without an exp claim; for a resource token, not one this server issues).
//   - Unsupported: SAS tokens, unknown token types, and AAD tokens under AADOff.
//   - DateMissing, DateInvalid, DateSkew: x-ms-date absent (master tokens only), not RFC 1123,
//     or further than MaxSkew from now. An AAD token's date is checked only when present; a
//     resource token's never (its own validity bounds it).
//   - BadPath: RawPath has an invalid percent escape (the *Error wraps ErrBadPath).
//   - BadSignature: the master-token signature matches neither key; a verified AAD token's
//     signature does not verify, or its algorithm is not accepted; a resource token's MAC
//     does not match (not issued by this server, or altered).
//   - TokenExpired: the AAD token's exp claim is not after now (AADLeeway after, verified).
//   - ResourceExpired: the resource token's validity has ended.
//   - Unsigned, UnknownKey, NotYetValid, BadIssuer, BadAudience, NoRole: a verified AAD
//     token (AADVerified) is unsigned, signed by an unknown key, not valid yet, from another
//     issuer, for another audience, or authentic but without a mapped role or scope.
//
// A master token signed with the master key gives ReadWrite, with the read-only key ReadOnly.
// An AAD token gives ReadWrite under AADEmulator, where only its shape and exp are checked
// (the emulator's test credential sends an unsigned token); under AADVerified it gives the
// access its roles map to. A resource token (ResourceToken) gives Scoped with its Grant:
// whether the grant covers the request, and whether its permission still exists unchanged,
// is the caller's to check.
func (v *Verifier) Authenticate(r Request, now time.Time) (Principal, error) {
	if r.Authorization == "" {
		return Principal{}, newError(Missing, "Required Header authorization is missing. Ensure a valid Authorization token is passed.")
	}
	st := v.states.Get().(*state)
	defer v.put(st)

	tok, err := parseToken(st.auth[:0], r.Authorization)
	st.auth = tok.buf
	if err != nil {
		return Principal{}, err
	}
	var a Access
	switch {
	case bytes.EqualFold(tok.typ, []byte("master")):
		a, err = v.verifyMaster(st, r, tok.sig, now)
	case bytes.EqualFold(tok.typ, []byte("aad")):
		a, err = v.verifyAAD(string(tok.sig), r.Date, now)
	case bytes.EqualFold(tok.typ, []byte("resource")):
		g, err := v.verifyResource(tok.sig, now)
		if err != nil {
			return Principal{}, err
		}
		return Principal{Access: Scoped, Grant: g}, nil
	default:
		return Principal{}, newError(Unsupported, fmt.Sprintf("Authorization token type %q is not supported.", clip(string(tok.typ))))
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{Access: a, Signed: bytes.EqualFold(tok.typ, []byte("master"))}, nil
}

// put returns st to the pool unless it has grown too large to keep.
func (v *Verifier) put(st *state) {
	if cap(st.auth) > maxPooledBuf || cap(st.payload) > maxPooledBuf {
		return
	}
	v.states.Put(st)
}

// verifyMaster checks a type=master token whose signature is sig (still base64; it aliases
// st.auth).
func (v *Verifier) verifyMaster(st *state, r Request, sig []byte, now time.Time) (Access, error) {
	if r.Date == "" {
		return 0, newError(DateMissing, "Required header x-ms-date is missing. Ensure a valid x-ms-date (RFC 1123 format) is passed.")
	}
	if err := checkDate(r.Date, now, v.maxSkew); err != nil {
		return 0, err
	}
	typ, link, err := Resource(r.RawPath)
	if err != nil {
		return 0, &Error{Reason: BadPath, Msg: "The request path is not a valid percent-encoded resource path.", cause: err}
	}
	pkDelete := typ == "operations" && strings.HasSuffix(link, pkDeleteSuffix) && isContainerLink(strings.TrimSuffix(link, pkDeleteSuffix))
	if r.Link != "" {
		link = r.Link
	}
	// A valid sig is the standard base64 of a 32-byte MAC: 44 characters. Its length is
	// public, so rejecting other lengths early leaks nothing.
	var got []byte
	if len(sig) <= 64 {
		if n, err := base64.StdEncoding.Decode(st.dec[:], sig); err == nil && n == sha256.Size {
			got = st.dec[:n]
		}
	}
	// The SDKs disagree on what they sign for a few operations (alternates); the first
	// form is the one an error message quotes.
	forms, n := alternates(typ, link, pkDelete)
	for _, f := range forms[:n] {
		if got == nil {
			break
		}
		st.payload = appendPayload(st.payload[:0], r.Method, f.typ, f.link, r.Date)
		if macEqual(st.master, st.payload, st.sum[:0], got) {
			return ReadWrite, nil
		}
		if st.readOnly != nil && macEqual(st.readOnly, st.payload, st.sum[:0], got) {
			return ReadOnly, nil
		}
	}
	st.payload = appendPayload(st.payload[:0], r.Method, forms[0].typ, forms[0].link, r.Date)
	return 0, newError(BadSignature, "The input authorization token can't serve the request. "+
		"The wrong key is being used or the expected payload is not built as per the protocol. "+
		"For more info: https://aka.ms/cosmosdb-tsg-401. Server used the following payload to sign: '"+
		strings.ReplaceAll(string(st.payload), "\n", `\n`)+"'")
}

// signed is a resource type and link a client may have signed.
type signed struct{ typ, link string }

// pkDeleteSuffix ends the path of "delete all items of a partition key",
// POST /dbs/{db}/colls/{coll}/operations/partitionkeydelete.
const pkDeleteSuffix = "/operations/partitionkeydelete"

// alternates returns the (type, link) pairs a request for (typ, link), as Resource derives
// them (or Request.Link gives them), may be signed with: that pair, and for the partition
// key delete operation (pkDelete), whose path names no resource of the usual kind, the
// container's link with type "colls" (what @azure/cosmos 4.9.3's
// Container.deleteAllItemsForPartitionKey signs) or "partitionkey" (what azure-cosmos for
// Python signs). The container's link is its name link, or, for a path of resource ids, its
// lower-cased _rid (Request.Link): a security hunt found that path signed as its last
// segment, "partitionkeydelete", the same for every container, so one signature deleted a
// partition key in any container of the account. No other request signs either extra form
// (no route takes a POST on a container's own path), so accepting them lets no signature
// serve another request.
//
// It returns the forms in an array and how many of it are used, so the common case costs
// no allocation.
func alternates(typ, link string, pkDelete bool) (forms [3]signed, n int) {
	forms[0] = signed{typ, link}
	if pkDelete {
		coll := strings.TrimSuffix(link, pkDeleteSuffix)
		forms[0], forms[1], forms[2] = signed{"colls", coll}, signed{"partitionkey", coll}, signed{typ, link}
		return forms, 3
	}
	return forms, 1
}

// isContainerLink reports whether link is dbs/{db}/colls/{coll} with non-empty ids.
func isContainerLink(link string) bool {
	rest, ok := strings.CutPrefix(link, "dbs/")
	if !ok {
		return false
	}
	db, rest, ok := strings.Cut(rest, "/")
	if !ok || db == "" {
		return false
	}
	coll, ok := strings.CutPrefix(rest, "colls/")
	return ok && coll != "" && !strings.Contains(coll, "/")
}

// macEqual reports whether the HMAC m of payload equals got, in constant time.
func macEqual(m hash.Hash, payload, sum, got []byte) bool {
	m.Reset()
	m.Write(payload)
	return hmac.Equal(m.Sum(sum), got)
}

// parseDate parses an x-ms-date value, ignoring the case of names. Accepted forms: RFC 1123
// with GMT (http.TimeFormat, what both SDKs send), the same with UTC, and RFC 1123 with a
// numeric zone (time.RFC1123Z).
func parseDate(s string) (time.Time, bool) {
	dateLayouts := [...]string{
		"Mon, 02 Jan 2006 15:04:05 GMT",
		"Mon, 02 Jan 2006 15:04:05 UTC",
		time.RFC1123Z,
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	// time.Parse already matches day and month names case-insensitively; only the literal
	// zone needs upper-casing (a client may send the lower-cased date it signed).
	if u := strings.ToUpper(s); u != s {
		for _, l := range dateLayouts {
			if t, err := time.Parse(l, u); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// checkDate returns a DateInvalid or DateSkew *Error unless date parses and lies within
// maxSkew of now.
func checkDate(date string, now time.Time, maxSkew time.Duration) error {
	t, ok := parseDate(date)
	if !ok {
		return newError(DateInvalid, "The input date header is invalid format. Please pass in RFC 1123 style date format.")
	}
	if d := t.Sub(now); d > maxSkew || d < -maxSkew {
		const f = "Mon, 02 Jan 2006 15:04:05 GMT"
		return newError(DateSkew, fmt.Sprintf("The authorization token is not valid at the current time. "+
			"Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			t.UTC().Format(f), t.Add(maxSkew).UTC().Format(f), now.UTC().Format(f)))
	}
	return nil
}

// token is a parsed Authorization header; its fields alias buf.
type token struct {
	buf           []byte
	typ, ver, sig []byte
}

// parseToken percent-decodes header into buf and splits it into its type, ver and sig
// fields. It returns a Malformed *Error for a bad escape, a missing or repeated field, or a
// version other than 1.0. Unknown fields are ignored.
func parseToken(buf []byte, header string) (token, error) {
	buf, ok := appendUnescape(buf, header)
	tok := token{buf: buf}
	if !ok {
		return tok, newError(Malformed, "The authorization token is not validly percent-encoded.")
	}
	var seen [3]bool
	for rest := buf; len(rest) > 0; {
		var part []byte
		part, rest, _ = bytes.Cut(rest, []byte("&"))
		if len(part) == 0 {
			continue
		}
		k, val, found := bytes.Cut(part, []byte("="))
		if !found {
			return tok, newError(Malformed, "The authorization token is not in the form type={type}&ver={version}&sig={signature}.")
		}
		var i int
		switch string(k) { // NB: no allocation: the compiler compares in place.
		case "type":
			i, tok.typ = 0, val
		case "ver":
			i, tok.ver = 1, val
		case "sig":
			i, tok.sig = 2, val
		default:
			continue
		}
		if seen[i] {
			return tok, newError(Malformed, fmt.Sprintf("The authorization token has more than one %q field.", k))
		}
		seen[i] = true
	}
	switch {
	case !seen[0] || len(tok.typ) == 0:
		return tok, newError(Malformed, "The authorization token has no type field.")
	case !seen[1] || len(tok.ver) == 0:
		return tok, newError(Malformed, "The authorization token has no ver field.")
	case !seen[2] || len(tok.sig) == 0:
		return tok, newError(Malformed, "The authorization token has no sig field.")
	case string(tok.ver) != "1.0":
		return tok, newError(Malformed, fmt.Sprintf("The authorization token version %q is not supported; use 1.0.", clip(string(tok.ver))))
	}
	return tok, nil
}

// appendUnescape appends s to buf with %XX escapes (either hex case) decoded. Unlike
// url.QueryUnescape it leaves '+' alone: raw tokens carry base64 '+', and encoded ones
// carry %2B. It reports false for a '%' not followed by two hex digits.
func appendUnescape(buf []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			buf = append(buf, c)
			continue
		}
		if i+2 >= len(s) {
			return buf, false
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return buf, false
		}
		buf = append(buf, hi<<4|lo)
		i += 2
	}
	return buf, true
}

// unhex returns the value of hex digit c.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// clip shortens client-supplied text quoted back in an error message.
func clip(s string) string {
	const max = 32
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

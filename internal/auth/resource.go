package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// Resource tokens (the _token of a permission, protocol doc §2.4). The SDKs treat a token as
// opaque: they send the permission's _token verbatim, percent-encoded, as the Authorization
// header. Ours is
//
//	type=resource&ver=1.0&sig=<claims>.<mac>
//
// where claims is the base64url (no padding) of a JSON object holding the Grant and mac the
// base64url of HMAC-SHA256(tokenKey, "partita resource token v1\n" + claims). tokenKey is
// derived from the master key (HMAC-SHA256(masterKey, "partita resource token key v1")), so
// no secret is stored beside the data, a token cannot be forged or altered without the master
// key, and changing the master key invalidates every token, as regenerating an account key
// does in Cosmos DB. The claims are signed, not encrypted: their holder can read the names of
// the database, container and permission, which it knows anyway.

const (
	tokenKeyLabel = "partita resource token key v1"
	tokenMACLabel = "partita resource token v1\n"
	// maxClaims bounds the encoded claims a token may carry (a permission's ids and
	// partition key); longer ones are refused before they are decoded.
	maxClaims = 8 << 10
)

// Mode is what a resource token lets its holder do within its scope.
type Mode int

const (
	// ModeRead allows reads of the items in scope (permissionMode "Read").
	ModeRead Mode = iota + 1
	// ModeAll allows reads and writes of the items in scope (permissionMode "All").
	ModeAll
)

// String returns "Read", "All" or "Mode(n)".
func (m Mode) String() string {
	switch m {
	case ModeRead:
		return "Read"
	case ModeAll:
		return "All"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Grant is what a resource token carries: the permission it was issued for, as it was when
// the token was issued, and so the token's scope. The zero value grants nothing.
type Grant struct {
	DB         string // the database's id
	User       string // the user's _rid
	Permission string // the permission's id
	RID        string // the permission's _rid
	ETag       string // the permission's _etag when the token was issued
	Mode       Mode
	// Container and ContainerRID name the container in scope: its id and its _rid, so the
	// token does not cover a later container of the same name.
	Container, ContainerRID string
	// Item is the id of the one item in scope; "" when the scope is the whole container.
	// ItemRID: Item is the item's _rid instead (the permission named it by its _self).
	Item    string
	ItemRID bool
	// PK is the logical partition in scope (the permission's resourcePartitionKey) as a
	// canonical JSON array; "" when every partition key is.
	PK string
	// Issued and Expires bound the token's validity: it is valid from Issued until just
	// before Expires (whole seconds).
	Issued, Expires time.Time
}

// claims is a Grant as a token encodes it.
type claims struct {
	DB           string `json:"db"`
	User         string `json:"u"`
	Permission   string `json:"p"`
	RID          string `json:"r"`
	ETag         string `json:"e"`
	Mode         Mode   `json:"m"`
	Container    string `json:"c"`
	ContainerRID string `json:"cr"`
	Item         string `json:"i,omitempty"`
	ItemRID      bool   `json:"ir,omitempty"`
	PK           string `json:"k,omitempty"`
	Issued       int64  `json:"iat"`
	Expires      int64  `json:"exp"`
}

// tokenKey derives the key resource tokens are signed with from the master key.
func tokenKey(masterKey []byte) []byte {
	m := hmac.New(sha256.New, masterKey)
	m.Write([]byte(tokenKeyLabel))
	return m.Sum(nil)
}

// ResourceToken returns the resource token for g: the value of a permission's _token, which
// a client sends as its Authorization header. It is safe for concurrent use. A token holds
// whole seconds: its expiry is rounded up, so it is valid for at least g's validity (rounded
// down, a token asked for one second issued at x.9 s expired a tenth of a second later: the
// Node tests' one-second token, read at once, was refused now and then).
func (v *Verifier) ResourceToken(g Grant) string {
	expires := g.Expires.Unix()
	if g.Expires.After(time.Unix(expires, 0)) {
		expires++
	}
	c := claims{
		DB: g.DB, User: g.User, Permission: g.Permission, RID: g.RID, ETag: g.ETag, Mode: g.Mode,
		Container: g.Container, ContainerRID: g.ContainerRID, Item: g.Item, ItemRID: g.ItemRID, PK: g.PK,
		Issued: g.Issued.Unix(), Expires: expires,
	}
	raw, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("auth: marshal claims: %v", err)) // strings and integers always marshal
	}
	enc := base64.RawURLEncoding.EncodeToString(raw)
	return "type=resource&ver=1.0&sig=" + enc + "." + base64.RawURLEncoding.EncodeToString(v.tokenMAC(enc))
}

// tokenMAC returns the MAC of a token's encoded claims.
func (v *Verifier) tokenMAC(encClaims string) []byte {
	m := hmac.New(sha256.New, v.tokenKey)
	m.Write([]byte(tokenMACLabel))
	m.Write([]byte(encClaims))
	return m.Sum(nil)
}

// verifyResource checks a type=resource token whose sig field is sig and returns its grant:
// a Malformed *Error when sig is not claims.mac, BadSignature when the MAC does not match
// (a token this server did not issue, or one altered since), ResourceExpired when now is
// outside its validity.
func (v *Verifier) verifyResource(sig []byte, now time.Time) (*Grant, error) {
	i := bytes.LastIndexByte(sig, '.')
	if i <= 0 || i > maxClaims {
		return nil, newError(Malformed, "The resource token is not valid: it is not a token issued by this server (the _token of a permission).")
	}
	enc, macB64 := sig[:i], sig[i+1:]
	mac := make([]byte, base64.RawURLEncoding.DecodedLen(len(macB64)))
	n, err := base64.RawURLEncoding.Decode(mac, macB64)
	if err != nil || n != sha256.Size || !hmac.Equal(v.tokenMAC(string(enc)), mac[:n]) {
		return nil, newError(BadSignature, "The resource token is not valid: it was not issued by this server, "+
			"or it was modified. Use the _token of a permission as it was returned.")
	}
	// The MAC matched, so the claims are ours: a failure from here on is a server bug or a
	// token from an incompatible release.
	raw, err := base64.RawURLEncoding.DecodeString(string(enc))
	var c claims
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.DB == "" || c.RID == "" || c.Container == "" || (c.Mode != ModeRead && c.Mode != ModeAll) {
		return nil, newError(Malformed, "The resource token is not valid: its content cannot be read by this server.")
	}
	g := &Grant{
		DB: c.DB, User: c.User, Permission: c.Permission, RID: c.RID, ETag: c.ETag, Mode: c.Mode,
		Container: c.Container, ContainerRID: c.ContainerRID, Item: c.Item, ItemRID: c.ItemRID, PK: c.PK,
		Issued: time.Unix(c.Issued, 0), Expires: time.Unix(c.Expires, 0),
	}
	if now.Before(g.Issued.Add(-v.maxSkew)) || !now.Before(g.Expires) {
		const f = "Mon, 02 Jan 2006 15:04:05 GMT"
		return nil, newError(ResourceExpired, fmt.Sprintf("The authorization token is not valid at the current time. "+
			"Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			g.Issued.UTC().Format(f), g.Expires.UTC().Format(f), now.UTC().Format(f)))
	}
	return g, nil
}

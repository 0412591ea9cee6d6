package auth

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testGrant is a grant valid for an hour from issued.
func testGrant(issued time.Time) Grant {
	return Grant{
		DB: "db", User: "AAAAAQAAAAI=", Permission: "p", RID: "AAAAAQAAAAIAAAAAAAAAAw==", ETag: `"00000000-0000-0000-0000-000000000003"`,
		Mode: ModeAll, Container: "orders", ContainerRID: "AAAAAQAAAAQ=", Item: "", PK: `["p1"]`,
		Issued: issued, Expires: issued.Add(time.Hour),
	}
}

// TestResourceTokenRoundTrip: a token the verifier issues authenticates as Scoped with the
// grant it was issued for, sent percent-encoded (as @azure/cosmos sends a permission's
// _token) or raw, for any request: the grant, not the signature, says what it covers.
func TestResourceTokenRoundTrip(t *testing.T) {
	now := mustTime(t, docDate)
	v := mustVerifier(t, Config{MasterKey: mustKey(t, docKey)})
	g := testGrant(now)
	tok := v.ResourceToken(g)
	if !strings.HasPrefix(tok, "type=resource&ver=1.0&sig=") {
		t.Fatalf("ResourceToken = %q, want the type=resource&ver=1.0&sig= form", tok)
	}
	for _, hdr := range []string{url.QueryEscape(tok), tok, lowerHex(url.QueryEscape(tok))} {
		for _, at := range []time.Time{now, now.Add(59 * time.Minute)} {
			p, err := v.Authenticate(Request{Method: "GET", RawPath: "/dbs/db/colls/orders/docs/x", Authorization: hdr}, at)
			if err != nil || p.Access != Scoped || p.Grant == nil {
				t.Fatalf("Authenticate(%q) at %v = %+v, %v, want Scoped with a grant", hdr, at, p, err)
			}
			want := g
			want.Issued, want.Expires = time.Unix(g.Issued.Unix(), 0), time.Unix(g.Expires.Unix(), 0)
			if d := cmp.Diff(want, *p.Grant); d != "" {
				t.Errorf("grant differs (-want +got):\n%s", d)
			}
		}
	}
	if a, err := v.Verify(Request{Method: "GET", RawPath: "/", Authorization: tok}, now); a != Scoped || err != nil {
		t.Errorf("Verify = %v, %v, want Scoped", a, err)
	}
}

// TestResourceTokenLastsItsValidity: a token holds whole seconds, and its expiry is rounded
// up: one issued at x.9 s for one second is valid until x+2 s, not x+1 s (a tenth of a
// second: the Node tests' one-second token was refused at once now and then).
func TestResourceTokenLastsItsValidity(t *testing.T) {
	issued := mustTime(t, docDate).Add(900 * time.Millisecond)
	v := mustVerifier(t, Config{MasterKey: mustKey(t, docKey)})
	g := testGrant(issued)
	g.Expires = issued.Add(time.Second)
	tok := v.ResourceToken(g)
	for _, c := range []struct {
		at time.Time
		ok bool
	}{
		{issued, true},
		{issued.Add(999 * time.Millisecond), true},
		{issued.Add(1099 * time.Millisecond), true},  // x+2 s not reached
		{issued.Add(1100 * time.Millisecond), false}, // x+2 s
	} {
		_, err := v.Authenticate(Request{Method: "GET", RawPath: "/dbs/db/colls/orders/docs/x", Authorization: tok}, c.at)
		if (err == nil) != c.ok {
			t.Errorf("a one-second token issued at %v, used at %v: %v, want valid %v", issued, c.at, err, c.ok)
		}
	}
	// A whole-second validity is kept as it is.
	g = testGrant(mustTime(t, docDate))
	if _, err := v.Authenticate(Request{Method: "GET", RawPath: "/", Authorization: v.ResourceToken(g)}, g.Expires); err == nil {
		t.Error("a token issued on a whole second is valid at its expiry")
	}
}

// TestResourceTokenRefused: tokens this server did not issue, altered ones, and ones outside
// their validity are refused with the matching Reason.
func TestResourceTokenRefused(t *testing.T) {
	now := mustTime(t, docDate)
	v := mustVerifier(t, Config{MasterKey: mustKey(t, docKey)})
	other := mustVerifier(t, Config{MasterKey: mustKey(t, emulatorKey)})
	good := v.ResourceToken(testGrant(now))
	sig := strings.TrimPrefix(good, "type=resource&ver=1.0&sig=")
	claims, mac, _ := strings.Cut(sig, ".")

	// A grant widened by its holder: All on another container, no partition key.
	var c map[string]any
	raw, _ := base64.RawURLEncoding.DecodeString(claims)
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	c["c"], c["k"] = "other", ""
	widened, _ := json.Marshal(c)
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	tok := func(s string) string { return "type=resource&ver=1.0&sig=" + s }

	tests := []struct {
		name string
		auth string
		at   time.Time
		want Reason
	}{
		{"issued with another master key", other.ResourceToken(testGrant(now)), now, BadSignature},
		{"claims altered", tok(flip(claims, 3) + "." + mac), now, BadSignature},
		{"claims widened", tok(base64.RawURLEncoding.EncodeToString(widened) + "." + mac), now, BadSignature},
		{"mac altered", tok(claims + "." + flip(mac, 5)), now, BadSignature},
		{"mac truncated", tok(claims + "." + mac[:20]), now, BadSignature},
		{"mac not base64", tok(claims + ".!!!"), now, BadSignature},
		{"no mac", tok(claims), now, Malformed},
		{"empty claims", tok("." + mac), now, Malformed},
		{"master type with the token's sig", "type=master&ver=1.0&sig=" + sig, now, BadSignature},
		{"expired", good, now.Add(time.Hour), ResourceExpired},
		{"long expired", good, now.Add(48 * time.Hour), ResourceExpired},
		{"not yet valid", good, now.Add(-DefaultMaxSkew - time.Minute), ResourceExpired},
		{"huge", tok(strings.Repeat("A", maxClaims+1) + "." + mac), now, Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Authenticate(Request{Method: "GET", RawPath: "/dbs/db/colls/orders/docs/x", Authorization: tt.auth, Date: docDate}, tt.at)
			if got := reasonOf(err); got != tt.want || p.Access != 0 || p.Grant != nil {
				t.Errorf("Authenticate = %+v, %v (%v), want reason %v and no access", p, err, got, tt.want)
			}
		})
	}
	// A valid token with a modified MAC, sent percent-encoded as the SDK would.
	if _, err := v.Authenticate(Request{Method: "GET", RawPath: "/", Authorization: url.QueryEscape(tok(claims + "." + flip(mac, 0)))}, now); reasonOf(err) != BadSignature {
		t.Errorf("encoded altered token: %v, want BadSignature", err)
	}
}

// TestResourceTokenExpiredMessage: an expired token is told so in Cosmos DB's words, with
// the token's validity and the server's time.
func TestResourceTokenExpiredMessage(t *testing.T) {
	now := mustTime(t, docDate)
	v := mustVerifier(t, Config{MasterKey: mustKey(t, docKey)})
	_, err := v.Authenticate(Request{Method: "GET", RawPath: "/", Authorization: v.ResourceToken(testGrant(now))}, now.Add(2*time.Hour))
	e, ok := err.(*Error)
	want := "The authorization token is not valid at the current time. Please create another token and retry " +
		"(token start time: Thu, 27 Apr 2017 00:51:12 GMT, token expiry time: Thu, 27 Apr 2017 01:51:12 GMT, current server time: Thu, 27 Apr 2017 02:51:12 GMT)."
	if !ok || e.Reason != ResourceExpired || e.Msg != want {
		t.Errorf("expired token: %v, want ResourceExpired %q", err, want)
	}
}

// TestPartitionKeyDeleteSignatures: POST …/operations/partitionkeydelete verifies signed as
// @azure/cosmos signs it (type colls, the container's link), as the Python SDK does (type
// partitionkey), and as derived from the path; the extra forms serve no other request.
func TestPartitionKeyDeleteSignatures(t *testing.T) {
	key := mustKey(t, emulatorKey)
	now := mustTime(t, emuDate)
	v := mustVerifier(t, Config{MasterKey: key})
	const path = "/dbs/db/colls/c%201/operations/partitionkeydelete"
	for _, s := range []struct{ typ, link string }{
		{"colls", "dbs/db/colls/c 1"},
		{"partitionkey", "dbs/db/colls/c 1"},
		{"operations", "dbs/db/colls/c 1/operations/partitionkeydelete"},
	} {
		r := Request{Method: "POST", RawPath: path, Authorization: MasterToken(key, "POST", s.typ, s.link, emuDate), Date: emuDate}
		if a, err := v.Verify(r, now); a != ReadWrite || err != nil {
			t.Errorf("signed as (%s, %s): %v, %v, want ReadWrite", s.typ, s.link, a, err)
		}
	}
	for _, r := range []Request{
		// The container form on another path.
		{Method: "POST", RawPath: "/dbs/db/colls/c%201/docs", Authorization: MasterToken(key, "POST", "colls", "dbs/db/colls/c 1", emuDate)},
		// Another verb.
		{Method: "DELETE", RawPath: path, Authorization: MasterToken(key, "POST", "colls", "dbs/db/colls/c 1", emuDate)},
		// Another container.
		{Method: "POST", RawPath: "/dbs/db/colls/d/operations/partitionkeydelete", Authorization: MasterToken(key, "POST", "colls", "dbs/db/colls/c 1", emuDate)},
	} {
		r.Date = emuDate
		if _, err := v.Verify(r, now); reasonOf(err) != BadSignature {
			t.Errorf("Verify(%+v) = %v, want BadSignature", r, err)
		}
	}
	// A path of resource ids is signed as its container's lower-cased _rid
	// (Request.Link), never as its last segment: signed so, one signature
	// deleted in every container of the account (a security hunt).
	const ridPath = "/dbs/AAAAAQ==/colls/AAAAAQAAAAI=/operations/partitionkeydelete"
	for _, s := range []struct{ typ, link string }{{"partitionkey", "aaaaaqaaaai="}, {"colls", "aaaaaqaaaai="}} {
		r := Request{Method: "POST", RawPath: ridPath, Link: "aaaaaqaaaai=", Authorization: MasterToken(key, "POST", s.typ, s.link, emuDate), Date: emuDate}
		if a, err := v.Verify(r, now); a != ReadWrite || err != nil {
			t.Errorf("by _rid, signed as (%s, %s): %v, %v, want ReadWrite", s.typ, s.link, a, err)
		}
	}
	for _, s := range []struct{ typ, link, ridLink string }{
		{"operations", "partitionkeydelete", "aaaaaqaaaai="},
		{"partitionkey", "aaaaaqaaaai=", "aaaaaqaaaau="}, // another container's
	} {
		r := Request{Method: "POST", RawPath: ridPath, Link: s.ridLink, Authorization: MasterToken(key, "POST", s.typ, s.link, emuDate), Date: emuDate}
		if _, err := v.Verify(r, now); reasonOf(err) != BadSignature {
			t.Errorf("by _rid %s, signed as (%s, %s): %v, want BadSignature", s.ridLink, s.typ, s.link, err)
		}
	}
	// A failure quotes the form @azure/cosmos signs.
	_, err := v.Verify(Request{Method: "POST", RawPath: path, Authorization: MasterToken(key, "GET", "colls", "x", emuDate), Date: emuDate}, now)
	if e, ok := err.(*Error); !ok || !strings.Contains(e.Msg, `'post\ncolls\ndbs/db/colls/c 1\n`) {
		t.Errorf("message %v does not quote the colls form", err)
	}
}

func TestIsContainerLink(t *testing.T) {
	for link, want := range map[string]bool{
		"dbs/a/colls/b": true, "dbs/a/colls/": false, "dbs//colls/b": false, "dbs/a/colls/b/docs": false,
		"dbs/a/x/b": false, "dbs/colls/a/b": false, "a/b/colls/c": false, "": false,
	} {
		if got := isContainerLink(link); got != want {
			t.Errorf("isContainerLink(%q) = %v, want %v", link, got, want)
		}
	}
}

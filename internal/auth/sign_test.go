package auth

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// docKey and docDate are the key and date of protocol doc §2.3's first table.
const (
	docKey      = "dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw=="
	docDate     = "Thu, 27 Apr 2017 00:51:12 GMT"
	emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
	emuDate     = "Mon, 01 Jan 2024 00:00:00 GMT"
)

// vector is one signature example of protocol doc §2.3, with a request path that signs for it.
type vector struct {
	key, date            string
	verb, typ, link, sig string
	path                 string // EscapedPath of a request that signs (typ, link)
}

// vectors holds every row of both tables in protocol doc §2.3.
var vectors = []vector{
	{docKey, docDate, "GET", "", "", "rp533/e+AfAi87cI2Vg1QmCqQY1Ki3ryYkABWMvF9xw=", "/"},
	{docKey, docDate, "POST", "dbs", "", "k07Cl/fj8J5PB70OV9cegv7N8VjN6zaUqVnbFgZhRGY=", "/dbs"},
	{docKey, docDate, "GET", "dbs", "dbs/ToDoList", "c09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu+c+c=", "/dbs/ToDoList"},
	{docKey, docDate, "DELETE", "dbs", "dbs/ToDoList", "zcvV/LX9iooxoB9dW/ha1sraJ11puXfOijGsn83cBDg=", "/dbs/ToDoList"},
	{docKey, docDate, "POST", "colls", "dbs/ToDoList", "Sxulv7dSKrHfALVp0XTEQqkNwZ3z5uAkNZ5mo4AVocE=", "/dbs/ToDoList/colls"},
	{docKey, docDate, "GET", "colls", "dbs/ToDoList/colls/coll", "JCjhd47mfSHK6XIZ9Bi+FBwiLGpZUbwBcb1u6opkTdQ=", "/dbs/ToDoList/colls/coll"},
	{docKey, docDate, "POST", "docs", "dbs/ToDoList/colls/coll", "0Ya7ON8G5HtAEcWdX68gQlB2V7raCJGoqvJ1GsEyzgI=", "/dbs/ToDoList/colls/coll/docs"},
	{docKey, docDate, "GET", "docs", "dbs/ToDoList/colls/coll/docs/doc 1", "xi4cdfrOU/4qZXiql2QRqeaiIsjPtThys7rabUH/huA=", "/dbs/ToDoList/colls/coll/docs/doc%201"},
	{docKey, docDate, "PUT", "docs", "dbs/ToDoList/colls/coll/docs/d2", "aDbNw35h2nid7nCo/AeYdyAvxz/wTIHCY26S8ksyrzk=", "/dbs/ToDoList/colls/coll/docs/d2"},
	{docKey, docDate, "PATCH", "docs", "dbs/ToDoList/colls/coll/docs/d2", "h8oIDV/+qxB/9GJFajxwUlm/NSpuVPQP1MoHLA/6Vnk=", "/dbs/ToDoList/colls/coll/docs/d2"},
	{docKey, docDate, "DELETE", "docs", "dbs/ToDoList/colls/coll/docs/d2", "E2BFo8k9jgHTdr0MirG9rlawxCvsu1xBX2anhUyx/GY=", "/dbs/ToDoList/colls/coll/docs/d2"},
	{docKey, docDate, "GET", "pkranges", "dbs/ToDoList/colls/coll", "TxpZBZZNEangw5HGdv1a6YiW2CO//pjmQHy9l4SKrC0=", "/dbs/ToDoList/colls/coll/pkranges"},
	{docKey, docDate, "POST", "offers", "", "b0nz9P5BDnVDmjQPEOvdfJUE1nni23ZWAtHxzLHFcFM=", "/offers"},
	{docKey, docDate, "GET", "offers", "abcd", "5YK6L6tdp0kWgGVT7bnaOSKYekYVP5P6J3FIZx6Zwz4=", "/offers/AbCd/"},
	{docKey, docDate, "PUT", "offers", "abcd", "dT7Uu8AqXDti5cF0EX59u6+GrjWjRJKRCZrv2Y6rneM=", "/offers/abcd"},
	{docKey, docDate, "POST", "sprocs", "dbs/ToDoList/colls/coll/sprocs/sp1", "0MxFJgTRUQSBzeHgJ/o2+U+8LO4V+EN7pnqdy8bRzWo=", "/dbs/ToDoList/colls/coll/sprocs/sp1"},

	{emulatorKey, emuDate, "GET", "", "", "u8LyODOx9u9KLAZ0XLJJonoe6JxFUWrh9etqqU9xL0I=", "/"},
	{emulatorKey, emuDate, "POST", "dbs", "", "OBAtWkLJj41BUMyPSJDPEFMF5aF1P3+e+qSzqq75wNE=", "/dbs"},
	{emulatorKey, emuDate, "GET", "dbs", "dbs/testdb", "dU7gTbpFkS1GL+7ESDZ0wDpgFVTfwcZs99HDtqSJRJc=", "/dbs/testdb"},
	{emulatorKey, emuDate, "POST", "docs", "dbs/testdb/colls/testcoll", "89x+CTNAVRz6KJUpbL7b2/6q82TskEvTTfL8eIuvbLE=", "/dbs/testdb/colls/testcoll/docs"},
	{emulatorKey, emuDate, "GET", "docs", "dbs/testdb/colls/testcoll/docs/item 1", "79TkpK67tglEbZdkj0s341LLyoXmqMFcaG2wzZU+PhE=", "/dbs/testdb/colls/testcoll/docs/item%201"},
	{emulatorKey, emuDate, "GET", "pkranges", "dbs/testdb/colls/testcoll", "P3TOyf8qayZVO2uWKMJf/M+W5NGOcbXvYb7SMZTGhEo=", "/dbs/testdb/colls/testcoll/pkranges"},
	{emulatorKey, emuDate, "GET", "offers", "abcd", "oJlK6yXHowf0SchmNmx1jVWKEmqRpgzR09xOH4pCGDY=", "/offers/abcd/"},
}

// mustKey decodes a base64 key or fails the test.
func mustKey(t testing.TB, b64 string) []byte {
	t.Helper()
	k, err := DecodeKey(b64)
	if err != nil {
		t.Fatalf("DecodeKey(%q) = %v", b64, err)
	}
	return k
}

func TestSignVectors(t *testing.T) {
	for _, v := range vectors {
		key := mustKey(t, v.key)
		if got := Sign(key, v.verb, v.typ, v.link, v.date); got != v.sig {
			t.Errorf("Sign(%s, %q, %q, %q) = %q, want %q", v.verb, v.typ, v.link, v.date, got, v.sig)
		}
		// The path a client uses for the request derives the same signed type and link.
		typ, link, err := Resource(v.path)
		if err != nil || typ != v.typ || link != v.link {
			t.Errorf("Resource(%q) = %q, %q, %v, want %q, %q, nil", v.path, typ, link, err, v.typ, v.link)
		}
	}
}

func TestPayload(t *testing.T) {
	tests := []struct {
		verb, typ, link, date string
		want                  string
	}{
		// Row 3 of protocol doc §2.3, spelled out there.
		{"GET", "dbs", "dbs/ToDoList", docDate, "get\ndbs\ndbs/ToDoList\nthu, 27 apr 2017 00:51:12 gmt\n\n"},
		{"GET", "", "", docDate, "get\n\n\nthu, 27 apr 2017 00:51:12 gmt\n\n"},
		// The link keeps its case and is not encoded; the type is lower-cased.
		{"Post", "DOCS", "dbs/A B/colls/C", "X", "post\ndocs\ndbs/A B/colls/C\nx\n\n"},
		// Non-ASCII is lower-cased with Unicode rules, like strings.ToLower.
		{"GET", "DÖCS", "Ä", "É", "get\ndöcs\nÄ\né\n\n"},
	}
	for _, tt := range tests {
		if got := Payload(tt.verb, tt.typ, tt.link, tt.date); got != tt.want {
			t.Errorf("Payload(%q, %q, %q, %q) = %q, want %q", tt.verb, tt.typ, tt.link, tt.date, got, tt.want)
		}
	}
}

func TestMasterToken(t *testing.T) {
	// The header value both SDKs send for row 3 of protocol doc §2.3.
	const want = "type%3Dmaster%26ver%3D1.0%26sig%3Dc09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu%2Bc%2Bc%3D"
	if got := MasterToken(mustKey(t, docKey), "GET", "dbs", "dbs/ToDoList", docDate); got != want {
		t.Errorf("MasterToken(row 3) = %q, want %q", got, want)
	}
}

func TestDecodeKey(t *testing.T) {
	tests := []struct {
		in      string
		wantLen int
		wantErr bool
	}{
		{emulatorKey, 64, false},
		{docKey, 64, false},
		{"AAAA", 3, false},
		{"", 0, true},
		{"not base64!", 0, true},
		{"AAA", 0, true},          // missing padding
		{"C2y6yDjf5_R-", 0, true}, // URL alphabet
	}
	for _, tt := range tests {
		got, err := DecodeKey(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadKey) {
				t.Errorf("DecodeKey(%q) = %v, want ErrBadKey", tt.in, err)
			}
			continue
		}
		if err != nil || len(got) != tt.wantLen {
			t.Errorf("DecodeKey(%q) = %d bytes, %v, want %d bytes, nil", tt.in, len(got), err, tt.wantLen)
		}
	}
}

func TestResource(t *testing.T) {
	tests := []struct {
		path, typ, link string
	}{
		// Every example row of protocol doc §2.2.
		{"/", "", ""},
		{"", "", ""},
		{"/dbs", "dbs", ""},
		{"/dbs/d1/colls", "colls", "dbs/d1"},
		{"/dbs/d1/colls/c1/docs", "docs", "dbs/d1/colls/c1"},
		{"/dbs/d1/colls/c1/pkranges", "pkranges", "dbs/d1/colls/c1"},
		{"/offers", "offers", ""},
		{"/dbs/d1", "dbs", "dbs/d1"},
		{"/dbs/d1/colls/c1/docs/doc%201", "docs", "dbs/d1/colls/c1/docs/doc 1"},
		{"/dbs/d1/colls/c1/sprocs/sp1", "sprocs", "dbs/d1/colls/c1/sprocs/sp1"},
		{"/offers/abcd", "offers", "abcd"},
		{"/offers/abcd/", "offers", "abcd"},

		// Ids with spaces, in every position.
		{"/dbs/my%20db/colls/my%20coll/docs/my%20doc", "docs", "dbs/my db/colls/my coll/docs/my doc"},
		{"/dbs/my%20db/colls", "colls", "dbs/my db"},
		// %2F inside an id stays in its segment (split before decoding).
		{"/dbs/d1/colls/c1/docs/a%2Fb", "docs", "dbs/d1/colls/c1/docs/a/b"},
		{"/dbs/d1/colls/c1/docs/a%2fb", "docs", "dbs/d1/colls/c1/docs/a/b"},
		{"/dbs/a%2Fb/colls", "colls", "dbs/a/b"},
		// Decoded once only: %2520 is a literal "%20" in the id.
		{"/dbs/d1/colls/c1/docs/x%2520y", "docs", "dbs/d1/colls/c1/docs/x%20y"},
		// '+' is literal in paths, not a space.
		{"/dbs/d1/colls/c1/docs/a+b", "docs", "dbs/d1/colls/c1/docs/a+b"},
		// Non-ASCII ids, raw or encoded.
		{"/dbs/d1/colls/c1/docs/%C3%A9t%C3%A9", "docs", "dbs/d1/colls/c1/docs/été"},
		// Trailing slash tolerated, on feeds and single resources.
		{"/dbs/", "dbs", ""},
		{"/dbs/d1/", "dbs", "dbs/d1"},
		{"/dbs/d1/colls/c1/docs/", "docs", "dbs/d1/colls/c1"},
		// Offers by id: lower-cased id only, with or without trailing slash or escapes.
		{"/offers/AbCd/", "offers", "abcd"},
		{"/offers/AbCd", "offers", "abcd"},
		{"/offers/A%62Cd", "offers", "abcd"},
		// Sproc execute, pkranges and the docs feed.
		{"/dbs/ToDoList/colls/coll/sprocs/sp%201", "sprocs", "dbs/ToDoList/colls/coll/sprocs/sp 1"},
		{"/dbs/ToDoList/colls/coll/pkranges", "pkranges", "dbs/ToDoList/colls/coll"},
		{"/dbs/ToDoList/colls/coll/docs", "docs", "dbs/ToDoList/colls/coll"},
		// Other resource kinds.
		{"/dbs/d1/users/u1/permissions/p1", "permissions", "dbs/d1/users/u1/permissions/p1"},
		{"/dbs/d1/colls/c1/conflicts", "conflicts", "dbs/d1/colls/c1"},
		// The link keeps the path's case (comparison is case-sensitive except offers).
		{"/dbs/ToDoList/colls/Coll", "colls", "dbs/ToDoList/colls/Coll"},
		// Only /offers/{id} is signed by lower-cased id; a database named offers is not.
		{"/dbs/offers", "dbs", "dbs/offers"},
		{"/dbs/Offers/colls/C", "colls", "dbs/Offers/colls/C"},
	}
	for _, tt := range tests {
		typ, link, err := Resource(tt.path)
		if err != nil || typ != tt.typ || link != tt.link {
			t.Errorf("Resource(%q) = %q, %q, %v, want %q, %q, nil", tt.path, typ, link, err, tt.typ, tt.link)
		}
	}
}

func TestResourceBadPath(t *testing.T) {
	for _, p := range []string{
		"/dbs/%zz",
		"/dbs/d1/colls/c1/docs/100%",
		"/dbs/d1/colls/c1/docs/%4",
		"/%",
	} {
		typ, link, err := Resource(p)
		if !errors.Is(err, ErrBadPath) {
			t.Errorf("Resource(%q) = %q, %q, %v, want ErrBadPath", p, typ, link, err)
		}
	}
}

// TestResourceEscapeInvariant checks that percent-encoding every segment (as Go's
// url.PathEscape does) never changes the result: the fast, no-escape path and the decoding
// path agree.
func TestResourceEscapeInvariant(t *testing.T) {
	for _, p := range []string{"/", "/dbs", "/dbs/d 1", "/dbs/d1/colls/c1/docs/doc 1", "/offers/AbCd/", "/a/b/c/d/e/"} {
		checkEscapeInvariant(t, p)
	}
}

// checkEscapeInvariant checks that Resource gives the same answer for raw and for its
// segment-wise url.PathEscape.
func checkEscapeInvariant(t *testing.T, raw string) {
	t.Helper()
	typ, link, err := Resource(raw)
	if err != nil {
		return
	}
	esc := escapeSegments(raw)
	etyp, elink, eerr := Resource(esc)
	if eerr != nil || etyp != typ || elink != link {
		t.Errorf("Resource(%q) = %q, %q, %v, want %q, %q, nil (as for %q)", esc, etyp, elink, eerr, typ, link, raw)
	}
}

// escapeSegments decodes every "/"-separated segment of p once and percent-encodes every
// byte of it again, so the decoding path of Resource always runs and sees the same segments.
func escapeSegments(p string) string {
	const hex = "0123456789ABCDEF"
	segs := strings.Split(p, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return p
		}
		out := make([]byte, 0, 3*len(d))
		for j := 0; j < len(d); j++ {
			out = append(out, '%', hex[d[j]>>4], hex[d[j]&15])
		}
		segs[i] = string(out)
	}
	return strings.Join(segs, "/")
}

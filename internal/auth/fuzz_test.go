package auth

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzVerify checks that Verify never panics on arbitrary headers and paths, that it returns
// access exactly when it returns no error, and that every error is an *Error with a known
// Reason and a message.
func FuzzVerify(f *testing.F) {
	key := mustKey(f, docKey)
	for _, v := range vectors[:16] {
		f.Add(v.verb, v.path, url.QueryEscape(rawToken(v.sig)), v.date)
	}
	f.Add("GET", "/dbs/%zz", "type%3dmaster%26ver%3d1.0%26sig%3d", "")
	f.Add("POST", "/dbs", "type=aad&ver=1.0&sig="+emulatorJWT(f, mustTime(f, docDate).Add(time.Hour)), docDate)
	f.Add("POST", "/dbs", "type=aad&ver=1.0&sig=e30.eyJleHAiOjF9.", "")
	f.Add("GET", "/", "type=resource&ver=1.0&sig=x", "Thu, 27 Apr 2017 00:51:12 UTC")
	f.Add("GET", "/", "type=resource&ver=1.0&sig=e30.AAAA", "")
	f.Add("POST", "/dbs/d/colls/c/operations/partitionkeydelete", url.QueryEscape(rawToken(Sign(key, "POST", "colls", "dbs/d/colls/c", docDate))), docDate)
	f.Add("GET", "/", "%", "thu, 27 apr 2017 00:51:12 gmt")
	f.Add("GET", "//", "type=master&type=master", "Thu, 27 Apr 2017 02:51:12 +0200")

	now := mustTime(f, docDate)
	v := mustVerifier(f, Config{MasterKey: key, ReadOnlyKey: mustKey(f, emulatorKey), AAD: AADConfig{Mode: AADEmulator}})
	f.Fuzz(func(t *testing.T, method, path, auth, date string) {
		r := Request{Method: method, RawPath: path, Authorization: auth, Date: date}
		got, err := v.Verify(r, now)
		if err == nil {
			if got != ReadWrite && got != ReadOnly && got != Scoped {
				t.Fatalf("Verify(%+v) = %v, nil, want an access level", r, got)
			}
			return
		}
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Reason < Missing || e.Reason > lastReason || e.Msg == "" || got != 0 {
			t.Fatalf("Verify(%+v) = %v, %#v, want 0 and an *Error with a reason and message", r, got, err)
		}
	})
}

// FuzzResource checks that Resource never panics, that percent-encoding every segment does
// not change its result (the fast path agrees with the decoding path), that the link is the
// decoded path or its parent, and that a request signed for the derived type and link
// verifies.
func FuzzResource(f *testing.F) {
	for _, v := range vectors {
		f.Add(v.path)
	}
	for _, p := range []string{"", "/", "//", "/dbs/a%2Fb/colls", "/offers/AbCd/", "/dbs/%zz", "/a/b/c/", "/%C3%A9"} {
		f.Add(p)
	}
	key := mustKey(f, emulatorKey)
	now := mustTime(f, emuDate)
	v := mustVerifier(f, Config{MasterKey: key})
	f.Fuzz(func(t *testing.T, path string) {
		typ, link, err := Resource(path)
		if err != nil {
			if !errors.Is(err, ErrBadPath) || typ != "" || link != "" {
				t.Fatalf("Resource(%q) = %q, %q, %v, want an ErrBadPath error and no result", path, typ, link, err)
			}
			return
		}
		checkEscapeInvariant(t, path)
		if !strings.Contains(path, "%") && typ != offersType {
			// Without escapes the link is the trimmed path or its parent.
			p := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/")
			if link != p && link+"/"+typ != p && !(link == "" && typ == p) {
				t.Fatalf("Resource(%q) = %q, %q, not the path or its parent", path, typ, link)
			}
		}
		auth := MasterToken(key, "POST", typ, link, emuDate)
		r := Request{Method: "POST", RawPath: path, Authorization: auth, Date: emuDate}
		if got, err := v.Verify(r, now); got != ReadWrite || err != nil {
			t.Fatalf("Verify(%+v) = %v, %v, want ReadWrite, nil", r, got, err)
		}
	})
}

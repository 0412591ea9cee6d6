package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/partitadb/partita/internal/status"
)

// emulatorPathCheck mimics how the Cosmos DB emulator's gateway reads a
// request path, for clients tested against it (Config.EmulatorIDQuirks).
// The gateway decodes the whole path before splitting it, treats '\' as a
// separator, cuts at '#', decodes resource ids a second time and trims
// trailing whitespace; a resource id that does not survive that unchanged no
// longer matches the link the client signed, so the gateway answers 401.
// Control characters in a path get 400.
func emulatorPathCheck(rawPath string) error {
	for _, raw := range strings.Split(strings.Trim(rawPath, "/"), "/") {
		seg, err := url.PathUnescape(raw)
		if err != nil {
			return nil // the regular path checks report this
		}
		if strings.ContainsFunc(seg, unicode.IsControl) {
			return status.New(http.StatusBadRequest, "the request URL contains control characters")
		}
		twice, err := url.PathUnescape(seg)
		if strings.ContainsAny(seg, `/\#`) || err != nil || twice != seg || strings.TrimRightFunc(seg, unicode.IsSpace) != seg {
			return status.New(http.StatusUnauthorized, "The input authorization token can't serve the request. "+
				"The resource id in the request URL "+strconv.Quote(seg)+" cannot be addressed through the gateway.")
		}
	}
	return nil
}

// foldQuery returns r with its query string folded back into its path, the
// one reading of the URL that authentication and routing then share. The
// Cosmos DB REST API takes no query parameters, but the JS and Python SDKs
// put an item id into the URL as it is (encodeURI leaves '?' alone), so an
// id "a?b" arrives as the path ".../docs/a" and the query "b", while the
// SDK signed the link ".../docs/a?b".
//
// Folded in, the query extends the path's last segment only: a query
// holding '/' is refused (400), as it would add segments and so address
// another resource than the path names (no addressable id contains '/';
// one with an escaped %2F stays one segment, as in a path).
func foldQuery(r *http.Request) (*http.Request, error) {
	u := r.URL
	if u.RawQuery == "" && !u.ForceQuery {
		return r, nil
	}
	q := u.RawQuery
	if strings.Contains(q, "/") {
		return nil, status.BadRequest("the request URL has a query string with '/' (%.100q): Cosmos DB paths take no query string, and a resource id after a '?' cannot contain '/'", "?"+q)
	}
	dq, err := url.PathUnescape(q)
	if err != nil {
		return nil, status.BadRequest("the request URL's text after '?' (%.100q) is not validly percent-encoded", "?"+q)
	}
	u2 := *u
	u2.Path = u.Path + "?" + dq
	// Re-escaped as a path segment ('/' as %2F, '?' as %3F), the raw path
	// is always a valid encoding of Path: EscapedPath returns it as is, so
	// the segments auth.Resource and the router see are exactly these.
	u2.RawPath = u.EscapedPath() + url.PathEscape("?"+dq)
	u2.RawQuery, u2.ForceQuery = "", false
	r2 := *r
	r2.URL = &u2
	r2.RequestURI = u2.RequestURI()
	return &r2, nil
}

// signedQuestionMark returns r addressing the id of its path's last
// segment with a '?' appended, for a request whose signature does not
// verify as sent. The JS SDK signs an id ending in '?' as it is
// (".../docs/why?"), but its HTTP client drops a URL's empty query, so the
// path arrives as ".../docs/why". It is false unless r has no query and
// its path names a resource by id (an even number of segments). The
// caller serves the returned request only if the signature verifies for
// its path: the signature names that resource, so no other can be reached
// this way.
func signedQuestionMark(r *http.Request) (*http.Request, bool) {
	u := r.URL
	raw := u.EscapedPath()
	if u.RawQuery != "" || u.ForceQuery || !strings.HasPrefix(raw, "/dbs/") || strings.HasSuffix(raw, "/") ||
		strings.Count(strings.Trim(raw, "/"), "/")%2 == 0 {
		return nil, false
	}
	u2 := *u
	u2.Path, u2.RawPath = u.Path+"?", raw+"%3F"
	r2 := *r
	r2.URL = &u2
	r2.RequestURI = u2.RequestURI()
	return &r2, true
}

// leadingSlash returns r with the slashes its path starts with reduced to
// one. The Python SDK (v3) joins the account's endpoint, which ends in '/'
// as the service advertises it, and a path starting with '/', so every
// request after the first reads "//dbs/...", which Cosmos DB serves as
// "/dbs/..." (and signs as such).
func leadingSlash(r *http.Request) *http.Request {
	u := r.URL
	if !strings.HasPrefix(u.Path, "//") {
		return r
	}
	u2 := *u
	u2.Path = "/" + strings.TrimLeft(u.Path, "/")
	if u.RawPath != "" {
		u2.RawPath = "/" + strings.TrimLeft(u.RawPath, "/")
	}
	r2 := *r
	r2.URL = &u2
	r2.RequestURI = u2.RequestURI()
	return &r2
}

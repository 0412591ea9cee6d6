package api

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/partitadb/partita/internal/status"
)

// FuzzChangeFeedHeaders: whatever a client sends as the change feed's
// position, start time, range headers and session token, parsing never
// panics, and a refusal is a 400 *status.Error; an accepted etag is a
// position that formats back to an etag parsing to itself.
func FuzzChangeFeedHeaders(f *testing.F) {
	f.Add(`"42"`, "Mon, 02 Jan 2006 15:04:05 GMT", "0", "", "", "0:-1#12")
	f.Add("*", "Mon, 02 Jan 2006 15:04:05 UTC", "1", "08", "10", "0:-1#12,1:-1#99")
	f.Add("W/\"7\"", "", "coll,3", "", "", "")
	f.Add(`"abc"`, "yesterday", "", "0", "", "garbage")
	f.Add(`""`, "Mon, 02 Jan 2006 15:04:05 CET", "", "", "FF", "0:#1")
	f.Add("18446744073709551616", "", "", "", "", "0:x#1")
	f.Fuzz(func(t *testing.T, etag, since, rangeID, startEPK, endEPK, session string) {
		r, err := http.NewRequest(http.MethodGet, "https://localhost/dbs/d/colls/c/docs", nil)
		if err != nil {
			t.Skip()
		}
		for k, v := range map[string]string{"If-None-Match": etag, "If-Modified-Since": since, hdrPKRangeID: rangeID, hdrStartEPK: startEPK, hdrEndEPK: endEPK} {
			if v != "" {
				r.Header[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		req, err := changeFeedRequest(r)
		if err != nil {
			var se *status.Error
			if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
				t.Fatalf("changeFeedRequest refused with %v, want a 400 *status.Error", err)
			}
		} else if req.HasAfter {
			back, err := parseChangeFeedETag(changeFeedETag(req.After))
			if err != nil || back != req.After {
				t.Fatalf("position %d: etag %s parses to %d, %v", req.After, changeFeedETag(req.After), back, err)
			}
		}
		if session != "" {
			lsn, err := sessionLSN(session)
			if err != nil {
				var se *status.Error
				if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
					t.Fatalf("sessionLSN(%q) refused with %v, want a 400 *status.Error", session, err)
				}
			} else if tok := "0:-1#" + strconv.FormatUint(lsn, 10); mustLSN(t, tok) != lsn {
				t.Fatalf("sessionLSN round trip of %d failed", lsn)
			}
		}
	})
}

func mustLSN(t *testing.T, tok string) uint64 {
	t.Helper()
	n, err := sessionLSN(tok)
	if err != nil {
		t.Fatalf("sessionLSN(%q): %v", tok, err)
	}
	return n
}

// TestChangeFeedHeaderParsing pins the accepted forms.
func TestChangeFeedHeaderParsing(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{`"42"`, 42, true}, {"42", 42, true}, {`W/"7"`, 7, true}, {`"abc"`, 0, false}, {`""`, 0, false}, {"-1", 0, false}} {
		got, err := parseChangeFeedETag(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseChangeFeedETag(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"0:-1#12", 12, true}, {"0:-1#12,1:-1#99", 99, true}, {"3:5#8#1=4", 8, true}, {"0:-1", 0, false}, {"12", 0, false}, {"0:x#1", 0, false}} {
		got, err := sessionLSN(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("sessionLSN(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, in := range []string{"Mon, 02 Jan 2006 15:04:05 GMT", "Mon, 02 Jan 2006 15:04:05 UTC"} {
		if got, err := parseHTTPTime(in); err != nil || got.Unix() != 1136214245 {
			t.Errorf("parseHTTPTime(%q) = %v, %v; want 2006-01-02T15:04:05Z", in, got, err)
		}
	}
	if _, err := parseHTTPTime("Mon, 02 Jan 2006 15:04:05 CET"); err == nil {
		t.Error("parseHTTPTime accepted a CET time")
	}
}

package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/partitadb/partita/internal/engine"
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
				t.Fatalf("position %s: etag %s parses to %s, %v", req.After, changeFeedETag(req.After), back, err)
			}
		}
		if session != "" {
			toks, err := sessionTokens(session)
			if err != nil {
				var se *status.Error
				if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
					t.Fatalf("sessionTokens(%q) refused with %v, want a 400 *status.Error", session, err)
				}
			} else {
				for _, tk := range toks {
					if back := mustTokens(t, tk.RangeID+":-1#"+strconv.FormatUint(tk.LSN, 10)); len(back) != 1 || back[0] != tk {
						t.Fatalf("sessionTokens round trip of %+v = %+v", tk, back)
					}
				}
			}
		}
	})
}

func mustTokens(t *testing.T, tok string) []engine.SessionToken {
	t.Helper()
	toks, err := sessionTokens(tok)
	if err != nil {
		t.Fatalf("sessionTokens(%q): %v", tok, err)
	}
	return toks
}

// TestChangeFeedHeaderParsing pins the accepted forms.
func TestChangeFeedHeaderParsing(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{{`"42"`, "42", true}, {"42", "42", true}, {`W/"7"`, "7", true}, {`"0:12;3:4"`, "0:12;3:4", true}, {`"t1800000010_7"`, "t1800000010_7", true}, {`"0:t1800000010_7;3:4"`, "0:t1800000010_7;3:4", true}, {`"abc"`, "", false}, {`""`, "", false}, {"-1", "", false}} {
		got, err := parseChangeFeedETag(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseChangeFeedETag(%q) = %s, %v; want %s, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want []engine.SessionToken
		ok   bool
	}{
		{"0:-1#12", []engine.SessionToken{{RangeID: "0", LSN: 12}}, true},
		{"0:-1#12,1:-1#99", []engine.SessionToken{{RangeID: "0", LSN: 12}, {RangeID: "1", LSN: 99}}, true},
		{"3:5#8#1=4", []engine.SessionToken{{RangeID: "3", LSN: 8}}, true},
		{"0:-1", nil, false}, {"12", nil, false}, {"0:x#1", nil, false}, {":-1#1", nil, false},
	} {
		got, err := sessionTokens(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("sessionTokens(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
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

// FuzzHeaderValue: headerValues finds a header under any spelling of its
// name as http.Header.Values does, and appendCanonicalKey, where it takes
// a name, gives http.CanonicalHeaderKey's form of it.
func FuzzHeaderValue(f *testing.F) {
	for _, name := range []string{hdrPartitionKey, "x-ms-date", "X-MS-ACTIVITY-ID", "etag", "Date", hdrIndexMetricsV2, "a-", "-a", "x--y", "9x", "x_y", "x y", ""} {
		f.Add(name, "v")
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		if c, ok := appendCanonicalKey(nil, name); ok {
			if want := http.CanonicalHeaderKey(name); string(c) != want {
				t.Errorf("appendCanonicalKey(%q) = %q, want %q", name, c, want)
			}
		}
		h := http.Header{}
		h.Add(name, value)
		h.Add("Other", "o")
		if got, want := headerValues(h, name), h.Values(name); !slices.Equal(got, want) {
			t.Errorf("headerValues(%q) = %q, want %q", name, got, want)
		}
		if got, want := headerValue(h, name), h.Get(name); got != want {
			t.Errorf("headerValue(%q) = %q, want %q", name, got, want)
		}
	})
}

// TestHeaderValueAllocs: reading a request header by its lowercase name
// and setting a Cosmos DB response header allocate nothing beyond the
// header's value slice.
func TestHeaderValueAllocs(t *testing.T) {
	h := http.Header{}
	h.Set(hdrPartitionKey, `["a"]`)
	if n := testing.AllocsPerRun(100, func() {
		if headerValue(h, hdrPartitionKey) != `["a"]` || headerValue(h, "x-ms-date") != "" {
			t.Fatal("wrong value")
		}
	}); n != 0 {
		t.Errorf("headerValue: %v allocations, want 0", n)
	}
	w := &benchWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(100, func() { setHeader(w, "x-ms-session-token", "0:-1#1") }); n > 1 {
		t.Errorf("setHeader: %v allocations, want at most 1 (the value's slice)", n)
	}
	w.h.Set("x-ms-session-token", "canonical")
	setHeader(w, "x-ms-session-token", "0:-1#2")
	if len(w.h) != 1 || responseHeader(w, "x-ms-session-token") != "0:-1#2" {
		t.Errorf("setHeader over a canonical spelling: %v", w.h)
	}
}

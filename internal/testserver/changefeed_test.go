package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// cfVersion is what the change-feed tests write: an item and its version.
type cfVersion struct {
	ID string `json:"id"`
	PK string `json:"pk"`
	V  int    `json:"v"`
}

// TestChangeFeedAcrossLiveSplits: a reader follows the change feed of the
// whole container through the Go SDK (composite continuation tokens) while
// writers create and update items and the container splits, on its own
// (a 48 KB partition limit) and by forced splits. It sees no version twice,
// each item's versions in the order they were written, and every item's
// last version.
func TestChangeFeedAcrossLiveSplits(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Engine.PartitionMaxBytes = 48 << 10 }})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "cf", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pad := strings.Repeat("z", 700)

	const ids, versions = 120, 4
	var last sync.Map // id → last acknowledged version
	var wg sync.WaitGroup
	var failures atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for v := range versions {
				for i := w; i < ids; i += 4 {
					id, pk := fmt.Sprintf("i%03d", i), fmt.Sprintf("k%02d", i%40)
					body := fmt.Appendf(nil, `{"id":%q,"pk":%q,"v":%d,"pad":%q}`, id, pk, v, pad)
					if _, err := k.UpsertItem(ctx, azcosmos.NewPartitionKeyString(pk), body, nil); err != nil {
						t.Errorf("upsert %s v%d: %v", id, v, err)
						failures.Add(1)
						return
					}
					last.Store(id, v)
				}
			}
		})
	}
	wg.Go(func() { // forced splits while the writers run
		for range 3 {
			time.Sleep(150 * time.Millisecond)
			feed := readRanges(t, s, "cf")
			id := feed.PartitionKeyRanges[len(feed.PartitionKeyRanges)-1].ID
			resp, body, err := s.Do(ctx, http.MethodPost, "/_partita/dbs/db/colls/cf/pkranges/"+id+"/split", nil, nil)
			if err != nil || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusGone) {
				t.Errorf("forced split of %s: %v %v %s", id, resp, err, body)
			}
		}
	})
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	seen := map[string][]int{} // id → versions in the order read
	var token *string
	read := func() int {
		t.Helper()
		opts := &azcosmos.ChangeFeedOptions{MaxItemCount: 25, Continuation: token}
		if token == nil {
			opts.FeedRange = &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}
		}
		resp, err := k.ReadChangeFeed(ctx, opts)
		if err != nil {
			t.Fatalf("read change feed: %v", err)
		}
		tok := resp.ContinuationToken
		token = &tok
		for _, raw := range resp.Items {
			var x cfVersion
			if err := json.Unmarshal(raw, &x); err != nil {
				t.Fatal(err)
			}
			seen[x.ID] = append(seen[x.ID], x.V)
		}
		return len(resp.Items)
	}
	for following := true; following; {
		select {
		case <-writersDone:
			following = false
		default:
			read()
		}
	}
	if failures.Load() > 0 {
		t.FailNow()
	}
	// Drain: an empty round over every range ends it.
	for empty := 0; empty < 2; {
		if read() == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	if n := len(readRanges(t, s, "cf").PartitionKeyRanges); n < 4 {
		t.Errorf("%d ranges at the end, want at least 4 (3 forced splits and size splits)", n)
	}
	for i := range ids {
		id := fmt.Sprintf("i%03d", i)
		vs := seen[id]
		want, _ := last.Load(id)
		if len(vs) == 0 || vs[len(vs)-1] != want {
			t.Errorf("item %s: versions read %v, want them to end with the last written, %v", id, vs, want)
			continue
		}
		for j := 1; j < len(vs); j++ {
			if vs[j] <= vs[j-1] {
				t.Errorf("item %s: versions read %v: a version repeated or out of order", id, vs)
				break
			}
		}
	}
	if len(seen) != ids {
		t.Errorf("the change feed showed %d items, want %d", len(seen), ids)
	}
}

// TestChangeFeedProtocol: the wire details SDKs rely on — 304 with the
// position as etag when nothing is new, "*" for now, If-Modified-Since in
// GMT and in UTC (as the Go SDK writes it), _lsn on items, 410/1002 for a
// split range, 400 for a bad continuation and for the all-versions mode.
func TestChangeFeedProtocol(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "p", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	put := func(id string, v int) {
		t.Helper()
		if _, err := k.UpsertItem(ctx, azcosmos.NewPartitionKeyString("a"), fmt.Appendf(nil, `{"id":%q,"pk":"a","v":%d}`, id, v), nil); err != nil {
			t.Fatal(err)
		}
	}
	feed := func(h map[string]string) (*http.Response, []cfVersion, []byte) {
		t.Helper()
		hd := map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0"}
		for k, v := range h {
			hd[k] = v
		}
		resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/p/docs", hd, nil)
		if err != nil {
			t.Fatal(err)
		}
		var f struct{ Documents []cfVersion }
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &f); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
		}
		return resp, f.Documents, body
	}
	resp, _, _ := feed(nil)
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("etag") == "" {
		t.Fatalf("empty container: %s etag %q, want 304 with an etag", resp.Status, resp.Header.Get("etag"))
	}
	now := resp.Header.Get("etag")
	put("x", 1)
	put("y", 1)
	put("x", 2)
	resp, docs, body := feed(map[string]string{"If-None-Match": now})
	if resp.StatusCode != http.StatusOK || len(docs) != 2 || docs[0].ID != "y" || docs[1].ID != "x" || docs[1].V != 2 {
		t.Fatalf("after three writes: %s %+v, want y then x at v2", resp.Status, docs)
	}
	if !strings.Contains(string(body), `"_lsn":`) {
		t.Errorf("change feed items lack _lsn: %s", body)
	}
	etag := resp.Header.Get("etag")
	if resp, _, _ := feed(map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified || resp.Header.Get("etag") != etag {
		t.Errorf("at the end: %s etag %q, want 304 etag %q", resp.Status, resp.Header.Get("etag"), etag)
	}
	if resp, _, _ := feed(map[string]string{"If-None-Match": "*"}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("from now: %s, want 304", resp.Status)
	}
	// A start time: before the writes, everything; an hour ahead, nothing.
	past := time.Now().Add(-time.Hour).UTC()
	for _, f := range []string{past.Format(http.TimeFormat), past.Format(time.RFC1123)} {
		if resp, docs, _ := feed(map[string]string{"If-Modified-Since": f}); resp.StatusCode != http.StatusOK || len(docs) != 2 {
			t.Errorf("If-Modified-Since %q: %s %d items, want 2", f, resp.Status, len(docs))
		}
	}
	if resp, _, _ := feed(map[string]string{"If-Modified-Since": time.Now().Add(time.Hour).UTC().Format(time.RFC1123)}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since an hour ahead: %s, want 304", resp.Status)
	}
	// The etag wins over the start time (the JS SDK sends both).
	if resp, _, _ := feed(map[string]string{"If-None-Match": etag, "If-Modified-Since": past.Format(http.TimeFormat)}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("etag at the end with an old start time: %s, want 304", resp.Status)
	}
	// A logical partition feed, as the JS SDK's partition-key iterator
	// reads it: no range id.
	resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/p/docs", map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkey": `["a"]`}, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"_count":2`) {
		t.Errorf("logical partition feed: %v %v %s", resp, err, body)
	}
	for _, tc := range []struct {
		h    map[string]string
		code int
		sub  string
	}{
		{map[string]string{"If-None-Match": `"abc"`}, http.StatusBadRequest, ""},
		{map[string]string{"If-Modified-Since": "yesterday"}, http.StatusBadRequest, ""},
		{map[string]string{"A-IM": "Full-Fidelity Feed"}, http.StatusBadRequest, ""},
		{map[string]string{"x-ms-documentdb-partitionkeyrangeid": "7"}, http.StatusGone, "1002"},
		{map[string]string{"x-ms-start-epk": "80", "x-ms-end-epk": "40"}, http.StatusBadRequest, ""},
	} {
		resp, _, body := feed(tc.h)
		if resp.StatusCode != tc.code || (tc.sub != "" && resp.Header.Get("x-ms-substatus") != tc.sub) {
			t.Errorf("change feed with %v: %s %s, want %d %s", tc.h, resp.Status, resp.Header.Get("x-ms-substatus"), tc.code, tc.sub)
		}
		if !strings.Contains(string(body), `"message"`) {
			t.Errorf("change feed with %v: error body %s lacks a message", tc.h, body)
		}
	}
}

package testserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// hammer sends n raw upserts from 8 goroutines, choosing each item's
// partition key with key(i), and counts successes and 429s. Every 429 must
// carry a retry-after and Cosmos's substatus 3200.
func hammer(t *testing.T, s *testserver.Server, coll string, n int, key func(i int) string) (ok, throttled int64) {
	t.Helper()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				pk := key(i)
				body := fmt.Appendf(nil, `{"id":"w%d","pk":%q,"v":%d}`, i%50, pk, i)
				resp, _, err := s.Do(t.Context(), http.MethodPost, "/dbs/db/colls/"+coll+"/docs", map[string]string{
					"x-ms-documentdb-partitionkey": `["` + pk + `"]`, "x-ms-documentdb-is-upsert": "True", "Content-Type": "application/json",
				}, body)
				if err != nil {
					t.Error(err)
					return
				}
				switch resp.StatusCode {
				case http.StatusOK, http.StatusCreated:
					atomic.AddInt64(&ok, 1)
				case http.StatusTooManyRequests:
					atomic.AddInt64(&throttled, 1)
					ms, err := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms"))
					if err != nil || ms <= 0 || ms > 5000 || resp.Header.Get("x-ms-substatus") != "3200" {
						t.Errorf("429 with retry-after %q, substatus %q", resp.Header.Get("x-ms-retry-after-ms"), resp.Header.Get("x-ms-substatus"))
						return
					}
					if c := resp.Header.Get("x-ms-request-charge"); c != "0" {
						// Refused before any work: it costs nothing (it said 1).
						t.Errorf("429 with request charge %q, want 0", c)
						return
					}
				default:
					t.Errorf("upsert: status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	return ok, throttled
}

// pausableClock is a server clock that stands still until resumed, then
// runs at real speed from where it stood.
type pausableClock struct {
	at      time.Time
	resumed atomic.Pointer[time.Time]
}

func (c *pausableClock) now() time.Time {
	if r := c.resumed.Load(); r != nil {
		return c.at.Add(time.Since(*r))
	}
	return c.at
}

func (c *pausableClock) resume() { now := time.Now(); c.resumed.Store(&now) }

// TestHotKeyIsThrottled, by budget rather than by speed: on a stopped server
// clock a 400 RU/s container's bucket holds exactly 400 RU, so 300 writes to
// one key are mostly refused with 429 and a retry-after, while the same 300
// writes spread over 300 keys of a 4-partition container (24,000 RU/s) are
// all served. The partitions report and the metrics listener name the hot
// key and count its 429s. Then, with the clock running, the SDK, retrying on
// 429 by itself, gets every write through the container still in debt.
func TestHotKeyIsThrottled(t *testing.T) {
	clock := &pausableClock{at: time.Now()}
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) {
		c.Engine.RateLimit = "on"
		c.Server.MetricsAddr = "127.0.0.1:0"
	}, Now: clock.now})
	c := s.Client(t)
	pkDef := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "hot", PartitionKeyDefinition: pkDef},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(400))})
	newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "spread", PartitionKeyDefinition: pkDef},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})

	const writes = 300
	ok, throttled := hammer(t, s, "hot", writes, func(int) string { return "the-hot-key" })
	// A small write costs at least 5 RU: the 400 RU bucket serves at most
	// 80, plus one admitted per worker while the bucket still held a little.
	if ok+throttled != writes || ok > 400/5+8 || throttled == 0 {
		t.Errorf("hot key: %d writes served, %d throttled; want at most %d of %d served", ok, throttled, 400/5+8, writes)
	}
	ok, throttled = hammer(t, s, "spread", writes, func(i int) string { return fmt.Sprintf("key-%d", i) })
	spreadKeys := ok
	if throttled != 0 || ok != writes {
		t.Errorf("spread keys: %d served, %d throttled; want all %d served", ok, throttled, writes)
	}

	// The partitions report names the hot key, by request units and by
	// storage, and counts the throttling.
	hotRep := partitionsReport(t, s, "hot")
	if len(hotRep) != 1 {
		t.Fatalf("hot container: %d partitions reported, want 1", len(hotRep))
	}
	p := hotRep[0]
	if p.RUPerSecond != 400 || p.Throttled == 0 || p.Items != 50 || p.StorageBytes == 0 || p.LogicalPartitions != 1 ||
		len(p.TopKeysByRU) == 0 || p.TopKeysByRU[0].Key != `["the-hot-key"]` || p.TopKeysByStorage[0].Key != `["the-hot-key"]` {
		t.Errorf("hot partition report = %+v", p)
	}
	// Every write was to the hot key: its 429s are the partition's.
	if len(p.TopKeysByThrottles) != 1 || p.TopKeysByThrottles[0].Key != `["the-hot-key"]` || int64(p.TopKeysByThrottles[0].Weight) != p.Throttled {
		t.Errorf("hot partition's keys by 429s = %+v, want the hot key with all %d", p.TopKeysByThrottles, p.Throttled)
	}
	// Prometheus sees the same on the metrics listener, without
	// authentication and without keys.
	resp, body, err := s.Scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^partita_partition_throttled_total\{container="hot",db="db",range="0"\} ([0-9.e+]+)$`).FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || string(m[1]) == "0" || strings.Contains(string(body), "the-hot-key") {
		t.Errorf("/metrics: status %d, throttled %q; the hot container's 429s must show and its key must not:\n%.2000s", resp.StatusCode, m, body)
	}
	// Every 429 the node answered, whatever refused it.
	if m := regexp.MustCompile(`(?m)^partita_error_responses_total\{status="429"\} ([0-9.e+]+)$`).FindSubmatch(body); m == nil {
		t.Errorf("/metrics counts no 429 responses:\n%.3000s", body)
	} else if n, _ := strconv.ParseFloat(string(m[1]), 64); int64(n) < p.Throttled {
		t.Errorf("/metrics counts %v 429 responses, the hot partition %d", n, p.Throttled)
	}
	if !strings.Contains(string(body), `partita_container_physical_partitions{container="spread",db="db"} 4`) {
		t.Errorf("/metrics does not count the spread container's 4 partitions")
	}
	spreadRep := partitionsReport(t, s, "spread")
	if len(spreadRep) != 4 {
		t.Fatalf("spread container: %d partitions reported, want 4", len(spreadRep))
	}
	// The keys written spread over the 4 partitions (how many depends on
	// the machine's speed: count them, do not expect a number).
	lps := 0
	for _, p := range spreadRep {
		lps += p.LogicalPartitions
		if p.RUPerSecond != 6000 || p.Throttled != 0 || int64(p.LogicalPartitions) < spreadKeys/8 || p.ChargedRU <= 0 {
			t.Errorf("spread partition report = %+v (of %d keys)", p, spreadKeys)
		}
	}
	if int64(lps) != spreadKeys {
		t.Errorf("spread container: %d logical partitions reported, %d keys written", lps, spreadKeys)
	}

	// The SDK retries 429s after the retry-after it is given (azcore's
	// retry policy; applications raise its default of 3 retries for
	// throttled workloads). The hot container is still in debt when the
	// clock starts, so its first writes are refused and retried; every
	// write succeeds.
	throttledBefore := partitionsReport(t, s, "hot")[0].Throttled
	clock.resume()
	hot, _ := s.RetryingClient(t, 30).NewContainer("db", "hot")
	const sdkWrites = 40
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < sdkWrites; i += 4 {
				item := fmt.Appendf(nil, `{"id":"sdk%d","pk":"the-hot-key"}`, i)
				if _, err := hot.UpsertItem(t.Context(), azcosmos.NewPartitionKeyString("the-hot-key"), item, nil); err != nil {
					t.Errorf("SDK upsert %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if after := partitionsReport(t, s, "hot")[0].Throttled; after <= throttledBefore {
		t.Errorf("the SDK's writes to a container in debt were never throttled (429s %d before, %d after)", throttledBefore, after)
	}
}

// TestLogicalPartitionCapThroughSDK: with a 10 KB logical partition cap, the
// write that would pass it gets 403 with substatus 1014 and stores nothing;
// another key still takes writes.
func TestLogicalPartitionCapThroughSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Engine.LogicalPartitionMaxBytes = 10 << 10 }})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "capped", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("full")
	pad := strings.Repeat("y", 2000)
	var i int
	var err error
	for i = 0; i < 20; i++ {
		if _, err = k.CreateItem(t.Context(), pk, fmt.Appendf(nil, `{"id":"%d","pk":"full","pad":%q}`, i, pad), nil); err != nil {
			break
		}
	}
	if code, sub := statusOf(err); code != http.StatusForbidden || sub != "1014" || i < 4 || i > 5 {
		t.Fatalf("write %d: status %d/%s (%v), want 403/1014 at the 5th or 6th 2 KB item", i, code, sub, err)
	}
	if _, err := k.ReadItem(t.Context(), pk, strconv.Itoa(i), nil); err == nil {
		t.Errorf("the refused item %d was stored", i)
	}
	if _, err := k.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("other"), fmt.Appendf(nil, `{"id":"x","pk":"other","pad":%q}`, pad), nil); err != nil {
		t.Errorf("another logical partition: %v", err)
	}
}

type partitionReport struct {
	ID                string  `json:"id"`
	RUPerSecond       float64 `json:"ruPerSecond"`
	ChargedRU         float64 `json:"chargedRU"`
	Throttled         int64   `json:"throttled"`
	StorageBytes      int64   `json:"storageBytes"`
	Items             int64   `json:"items"`
	LogicalPartitions int     `json:"logicalPartitions"`
	TopKeysByRU       []struct {
		Key    string  `json:"key"`
		Weight float64 `json:"weight"`
	} `json:"topKeysByRU"`
	TopKeysByStorage []struct {
		Key   string `json:"key"`
		Bytes int64  `json:"bytes"`
	} `json:"topKeysByStorage"`
	TopKeysByThrottles []struct {
		Key    string  `json:"key"`
		Weight float64 `json:"weight"`
	} `json:"topKeysByThrottles"`
}

func partitionsReport(t *testing.T, s *testserver.Server, coll string) []partitionReport {
	t.Helper()
	resp, body, err := s.Do(t.Context(), http.MethodGet, "/_partita/dbs/db/colls/"+coll+"/partitions", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("partitions report: %v %v %s", resp, err, body)
	}
	var out struct{ Partitions []partitionReport }
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Partitions
}

// TestPriorityLevel (Cosmos DB's priority-based execution), by budget on a
// stopped server clock: low-priority writes (x-ms-cosmos-priority-level:
// Low) are refused with 429 once the partition's 400 RU bucket is down to
// half, leaving that half to high-priority writes, which are served until
// it is spent. An unknown level is 400. The header was ignored: low- and
// high-priority writes drew alike.
func TestPriorityLevel(t *testing.T) {
	clock := &pausableClock{at: time.Now()}
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Engine.RateLimit = "on" }, Now: clock.now})
	newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "prio", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(400))})
	i := 0
	write := func(level string) (int, float64) {
		i++
		h := map[string]string{"x-ms-documentdb-partitionkey": `["k"]`, "x-ms-documentdb-is-upsert": "True", "Content-Type": "application/json"}
		if level != "" {
			h["x-ms-cosmos-priority-level"] = level
		}
		resp, _, err := s.Do(t.Context(), http.MethodPost, "/dbs/db/colls/prio/docs", h, fmt.Appendf(nil, `{"id":"w%d","pk":"k"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		ru, _ := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64)
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("x-ms-retry-after-ms") == "" || resp.Header.Get("x-ms-substatus") != "3200") {
			t.Errorf("429 without retry-after or substatus 3200: %v", resp.Header)
		}
		return resp.StatusCode, ru
	}
	drain := func(level string) (served, last float64) {
		for n := 0; n < 1000; n++ {
			code, ru := write(level)
			if code == http.StatusTooManyRequests {
				return served, last
			}
			if code != http.StatusCreated && code != http.StatusOK {
				t.Fatalf("write at priority %q: status %d", level, code)
			}
			served, last = served+ru, ru
		}
		t.Fatalf("writes at priority %q never throttled", level)
		return 0, 0
	}
	low, last := drain("Low")
	if low < 200 || low >= 200+last {
		t.Errorf("low priority served %.2f RU of a 400 RU bucket, want [200, %.2f): the other half is left", low, 200+last)
	}
	// The same through azcosmos's PriorityLevel (it sends the header).
	cc, err := s.Client(t).NewContainer("db", "prio")
	if err != nil {
		t.Fatal(err)
	}
	lowLevel, highLevel := azcosmos.PriorityLevelLow, azcosmos.PriorityLevelHigh
	pk := azcosmos.NewPartitionKeyString("k")
	_, err = cc.UpsertItem(t.Context(), pk, []byte(`{"id":"sdk","pk":"k"}`), &azcosmos.ItemOptions{PriorityLevel: &lowLevel})
	if re, ok := errors.AsType[*azcore.ResponseError](err); !ok || re.StatusCode != http.StatusTooManyRequests {
		t.Errorf("azcosmos upsert at PriorityLevelLow with half the bucket left: %v, want 429", err)
	}
	resp, err := cc.UpsertItem(t.Context(), pk, []byte(`{"id":"sdk","pk":"k"}`), &azcosmos.ItemOptions{PriorityLevel: &highLevel})
	if err != nil {
		t.Fatalf("azcosmos upsert at PriorityLevelHigh: %v", err)
	}
	high, last := drain("High")
	high += float64(resp.RequestCharge)
	if total := low + high; total < 400 || total >= 400+last {
		t.Errorf("high priority served %.2f RU after low's %.2f, want the bucket's 400 in all", high, low)
	}
	if code, _ := write("low"); code != http.StatusTooManyRequests {
		t.Errorf("a low-priority write with the bucket spent: %d, want 429", code)
	}
	if code, _ := write("Medium"); code != http.StatusBadRequest {
		t.Errorf("x-ms-cosmos-priority-level: Medium: %d, want 400", code)
	}
}

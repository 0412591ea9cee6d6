package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// hammer sends raw upserts from 8 goroutines for d, choosing each item's
// partition key with key(i), and counts successes and 429s. Every 429 must
// carry a retry-after and Cosmos's substatus 3200.
func hammer(t *testing.T, s *testserver.Server, coll string, d time.Duration, key func(i int) string) (ok, throttled int64) {
	t.Helper()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var n atomic.Int64
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				i := int(n.Add(1))
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

// TestHotKeyIsThrottled: a 400 RU/s container hammered on one key gets
// 429s with retry-after, and serves about its provisioned rate; the same
// load spread over 1,000 keys of a 4-partition container (24,000 RU/s) is
// served without one; and the SDK, retrying on 429 by itself, gets every
// write through a throttled container.
func TestHotKeyIsThrottled(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) {
		c.Engine.RateLimit = "on"
		c.Server.MetricsAddr = "127.0.0.1:0"
	}})
	c := s.Client(t)
	pkDef := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "hot", PartitionKeyDefinition: pkDef},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(400))})
	newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "spread", PartitionKeyDefinition: pkDef},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})

	const d = 1500 * time.Millisecond
	ok, throttled := hammer(t, s, "hot", d, func(int) string { return "the-hot-key" })
	if throttled == 0 {
		t.Errorf("hot key: %d writes served, none throttled", ok)
	}
	// A 1 KB-ish write costs about 5-6 RU: 400 RU/s for 1.5 s plus the
	// one-second bucket serves at most ~(600+400)/5 writes.
	if ok > 220 {
		t.Errorf("hot key: %d writes served in %v at 400 RU/s", ok, d)
	}
	ok, throttled = hammer(t, s, "spread", d, func(i int) string { return fmt.Sprintf("key-%d", i%1000) })
	spreadKeys := min(ok, 1000)
	if throttled != 0 || ok < 100 {
		t.Errorf("spread keys: %d served, %d throttled; want all served", ok, throttled)
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
	// throttled workloads): every write to the throttled container
	// succeeds, taking about as long as the budget needs.
	hot, _ := s.RetryingClient(t, 30).NewContainer("db", "hot")
	time.Sleep(time.Second) // let the bucket refill
	start := time.Now()
	const writes = 160
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < writes; i += 8 {
				item := fmt.Appendf(nil, `{"id":"sdk%d","pk":"the-hot-key"}`, i)
				if _, err := hot.UpsertItem(t.Context(), azcosmos.NewPartitionKeyString("the-hot-key"), item, nil); err != nil {
					t.Errorf("SDK upsert %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	// 160 writes of ~5 RU = ~800 RU: at least ~1 s beyond the bucket's 400.
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Errorf("%d SDK writes at 400 RU/s took %v: not throttled", writes, el)
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

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/config"
)

// writeN is a stored procedure writing n items of one transaction id.
const writeN = `function writeN(pk, txn, n) {
	var coll = getContext().getCollection();
	for (var i = 0; i < n; i++) {
		if (!coll.upsertDocument(coll.getSelfLink(), {id: txn + "-" + i, pk: pk, txn: txn})) throw new Error("not accepted");
	}
	getContext().getResponse().setBody(n);
}`

const perTxn = 5

// rawDo sends a request signed with the emulator key.
func rawDo(ctx context.Context, hc *http.Client, endpoint, method, path string, hdr map[string]string, body []byte) (*http.Response, []byte, error) {
	u, _ := url.Parse(endpoint)
	u.Path = path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	typ, link, _ := auth.Resource(req.URL.EscapedPath())
	key, _ := auth.DecodeKey(config.EmulatorKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth.MasterToken(key, method, typ, link, date))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return resp, b.Bytes(), err
}

func trustingClient(t *testing.T, data string) *http.Client {
	pem, err := os.ReadFile(filepath.Join(data, "tls", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// crashCycles is how many kill -9 cycles the crash tests run:
// PARTITA_CRASH_CYCLES, default 2 (make crashloop sets more).
func crashCycles(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("PARTITA_CRASH_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PARTITA_CRASH_CYCLES=%q: want a positive number", v)
		}
		return n
	}
	return 2
}

// TestCrashAtomicity kills the server with SIGKILL while single upserts,
// transactional batches and stored procedures write and partitions split,
// restarts it, and after every cycle checks that every transaction is
// wholly present or wholly absent and that every acknowledged one is
// present (durability=sync), then stops the server and runs partita check
// on the data directory. PARTITA_CRASH_CYCLES cycles of about 1.5 s of
// load each (default 2; make crashloop runs more).
func TestCrashAtomicity(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	cycles := crashCycles(t)
	bin := build(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	endpoint, cmd := start(t, bin, addr, data)
	ctx := context.Background()
	c := client(t, endpoint, data)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	hc := trustingClient(t, data)
	if resp, body, err := rawDo(ctx, hc, endpoint, http.MethodPost, "/dbs/db/colls/k/sprocs", nil, mustMarshal(map[string]any{"id": "writeN", "body": writeN})); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create sproc: %v %s %v", resp, body, err)
	}

	const workers = 6
	var acked sync.Map // txn id → its number of items
	var seq atomic.Int64
	var splits atomic.Int64
	total := 0
	for cycle := range cycles {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				k, _ := c.NewContainer("db", "k")
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := seq.Add(1)
					txn := fmt.Sprintf("c%d-w%d-t%d", cycle, w, n)
					pk := fmt.Sprintf("p%d-%d", w, n%8) // 48 logical partitions: room to split
					size, ok := perTxn, false
					switch w % 3 {
					case 0:
						b := k.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
						for i := range perTxn {
							b.UpsertItem(mustMarshal(map[string]any{"id": fmt.Sprintf("%s-%d", txn, i), "pk": pk, "txn": txn}), nil)
						}
						resp, err := k.ExecuteTransactionalBatch(ctx, b, nil)
						ok = err == nil && resp.Success
					case 1:
						resp, _, err := rawDo(ctx, hc, endpoint, http.MethodPost, "/dbs/db/colls/k/sprocs/writeN",
							map[string]string{"x-ms-documentdb-partitionkey": `["` + pk + `"]`}, mustMarshal([]any{pk, txn, perTxn}))
						ok = err == nil && resp.StatusCode == 200
					default:
						size, txn = 1, txn+"-single"
						_, err := k.UpsertItem(ctx, azcosmos.NewPartitionKeyString(pk), mustMarshal(map[string]any{"id": txn + "-0", "pk": pk, "txn": txn}), nil)
						ok = err == nil
					}
					if ok {
						acked.Store(txn, size)
					}
				}
			})
		}
		// Split a range now and then while the load runs (an admin split:
		// a catalog write the crash may catch half-way).
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
				}
				ids := rangeIDs(ctx, hc, endpoint)
				if len(ids) == 0 {
					continue
				}
				id := ids[int(seq.Load())%len(ids)]
				resp, _, err := rawDo(ctx, hc, endpoint, http.MethodPost, "/_partita/dbs/db/colls/k/pkranges/"+id+"/split", nil, nil)
				if err == nil && resp.StatusCode == http.StatusOK {
					splits.Add(1)
				}
			}
		})
		time.Sleep(1500 * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown path runs
			t.Fatal(err)
		}
		_ = cmd.Wait()
		close(stop)
		wg.Wait()
		endpoint, cmd = start(t, bin, addr, data)
		c = client(t, endpoint, data)
		hc = trustingClient(t, data)
		total = checkTransactions(t, ctx, hc, endpoint, &acked, cycle)
		if t.Failed() {
			t.Fatalf("cycle %d of %d failed", cycle+1, cycles)
		}
		// With the server stopped, the data directory checks clean.
		stopServer(t, cmd)
		checkData(t, bin, data, fmt.Sprintf("cycle %d of %d", cycle+1, cycles))
		if cycle+1 < cycles {
			endpoint, cmd = start(t, bin, addr, data)
			c = client(t, endpoint, data)
			hc = trustingClient(t, data)
		}
	}
	nAcked := 0
	acked.Range(func(_, _ any) bool { nAcked++; return true })
	if nAcked < 20 {
		t.Errorf("only %d transactions were acknowledged: the load did not run", nAcked)
	}
	t.Logf("%d cycles: %d transactions acknowledged, %d present, %d splits, no violation", cycles, nAcked, total, splits.Load())
}

// stopServer stops a server with SIGTERM and waits for it to exit 0.
func stopServer(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("partita serve after SIGTERM: %v, want exit status 0", err)
	}
}

// checkData runs the binary's `partita check` on the data directory of a
// stopped server and fails the test, printing its report, unless it finds
// nothing (exit 0).
func checkData(t *testing.T, bin, data, when string) {
	t.Helper()
	out, err := exec.Command(bin, "check", "--data", data).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: partita check --data %s: %v\n%s", when, data, err, out)
	}
	t.Logf("%s: partita check: %s", when, bytes.TrimSpace(out))
}

// rangeIDs returns the ids of container k's current ranges (none on error).
func rangeIDs(ctx context.Context, hc *http.Client, endpoint string) []string {
	resp, body, err := rawDo(ctx, hc, endpoint, http.MethodGet, "/dbs/db/colls/k/pkranges", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	var feed struct {
		PartitionKeyRanges []struct{ ID string } `json:"PartitionKeyRanges"`
	}
	if json.Unmarshal(body, &feed) != nil {
		return nil
	}
	var ids []string
	for _, r := range feed.PartitionKeyRanges {
		ids = append(ids, r.ID)
	}
	return ids
}

// checkTransactions reads every item of container k and checks that each
// transaction is whole and that every acknowledged one is present; it
// returns how many transactions are present.
func checkTransactions(t *testing.T, ctx context.Context, hc *http.Client, endpoint string, acked *sync.Map, cycle int) int {
	t.Helper()
	counts := map[string]int{}
	cont := ""
	for {
		hdr := map[string]string{"x-ms-max-item-count": "1000"}
		if cont != "" {
			hdr["x-ms-continuation"] = cont
		}
		resp, body, err := rawDo(ctx, hc, endpoint, http.MethodGet, "/dbs/db/colls/k/docs", hdr, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("cycle %d: read feed: %v %s %v", cycle, resp, body, err)
		}
		var page struct{ Documents []struct{ Txn string } }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Documents {
			counts[d.Txn]++
		}
		if cont = resp.Header.Get("x-ms-continuation"); cont == "" {
			break
		}
	}
	acked.Range(func(k, v any) bool {
		if counts[k.(string)] != v.(int) {
			t.Errorf("cycle %d: acknowledged transaction %s has %d of %d items after the crash", cycle, k, counts[k.(string)], v)
		}
		return true
	})
	for txn, n := range counts {
		want := perTxn
		if strings.HasSuffix(txn, "-single") {
			want = 1
		}
		if n != want {
			t.Errorf("cycle %d: transaction %s is partly present: %d of %d items", cycle, txn, n, want)
		}
	}
	return len(counts)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

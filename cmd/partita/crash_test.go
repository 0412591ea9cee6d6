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
	"path/filepath"
	"sync"
	"sync/atomic"
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

// TestCrashAtomicity kills the server with SIGKILL while batches and stored
// procedures write, restarts it, and checks that every transaction is wholly
// present or wholly absent, and that every acknowledged one is present
// (durability=sync). Two kill cycles, a few seconds each.
func TestCrashAtomicity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
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
	var acked sync.Map // txn id → true
	var seq atomic.Int64
	for cycle := range 2 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				k, _ := c.NewContainer("db", "k")
				pk := fmt.Sprintf("p%d", w)
				for {
					select {
					case <-stop:
						return
					default:
					}
					txn := fmt.Sprintf("c%d-w%d-t%d", cycle, w, seq.Add(1))
					var ok bool
					if w%2 == 0 {
						b := k.NewTransactionalBatch(azcosmos.NewPartitionKeyString(pk))
						for i := range perTxn {
							b.UpsertItem(mustMarshal(map[string]any{"id": fmt.Sprintf("%s-%d", txn, i), "pk": pk, "txn": txn}), nil)
						}
						resp, err := k.ExecuteTransactionalBatch(ctx, b, nil)
						ok = err == nil && resp.Success
					} else {
						resp, _, err := rawDo(ctx, hc, endpoint, http.MethodPost, "/dbs/db/colls/k/sprocs/writeN",
							map[string]string{"x-ms-documentdb-partitionkey": `["` + pk + `"]`}, mustMarshal([]any{pk, txn, perTxn}))
						ok = err == nil && resp.StatusCode == 200
					}
					if ok {
						acked.Store(txn, true)
					}
				}
			})
		}
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
	}

	// Every transaction wholly present or absent; every acknowledged one present.
	counts := map[string]int{}
	for w := range workers {
		cont := ""
		for {
			hdr := map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, w), "x-ms-max-item-count": "1000"}
			if cont != "" {
				hdr["x-ms-continuation"] = cont
			}
			resp, body, err := rawDo(ctx, hc, endpoint, http.MethodGet, "/dbs/db/colls/k/docs", hdr, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("read feed: %v %s %v", resp, body, err)
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
	}
	nAcked := 0
	acked.Range(func(k, _ any) bool {
		nAcked++
		if counts[k.(string)] != perTxn {
			t.Errorf("acknowledged transaction %s has %d of %d items after the crash", k, counts[k.(string)], perTxn)
		}
		return true
	})
	for txn, n := range counts {
		if n != perTxn {
			t.Errorf("transaction %s is partly present: %d of %d items", txn, n, perTxn)
		}
	}
	if nAcked < 20 {
		t.Errorf("only %d transactions were acknowledged: the load did not run", nAcked)
	}
	t.Logf("%d transactions acknowledged, %d present after two kill -9 cycles", nAcked, len(counts))
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

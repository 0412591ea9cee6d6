package explorer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// chromium returns the path of a Chromium or Chrome binary: $PARTITA_CHROMIUM,
// or the first of the usual names on $PATH; "" when there is none.
func chromium() string {
	if p := os.Getenv("PARTITA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// screenshotDir is where the browser test writes its screenshots:
// $PARTITA_SCREENSHOTS (created if needed), or the test's temporary
// directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PARTITA_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser drives one headless Chromium tab against a test server.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

// newBrowser starts headless Chromium at 1280×800 (skipping the test when
// there is none), stopped in t.Cleanup.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (install Debian's chromium package or set PARTITA_CHROMIUM): skipping the Data Explorer's browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("ignore-certificate-errors", true), // the server's certificate is self-signed
		chromedp.NoSandbox,                               // CI runs as root
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start chromium %s: %v", bin, err)
	}
	return &browser{t: t, ctx: ctx, dir: screenshotDir(t)}
}

// run runs actions, each step bounded so that a broken page fails the test
// rather than hanging it.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v (banner: %q, errors shown: %q, advise: %q)", what, err, b.text("#banner"), b.text(".error"), b.text("#advise-out"))
	}
}

// text returns the text of the first element matching sel, "" if none.
func (b *browser) text(sel string) string {
	var s string
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(document.querySelector(%s)||{}).textContent||""`, jsString(sel)), &s))
	return s
}

// waitText waits until an element matching sel contains want.
func (b *browser) waitText(what, sel, want string) {
	b.t.Helper()
	var ok bool
	b.run(what, chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, jsString(sel), jsString(want)), &ok,
		chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// waitValue waits until the form control matching sel holds want in its
// value.
func (b *browser) waitValue(what, sel, want string) {
	b.t.Helper()
	var ok bool
	b.run(what, chromedp.Poll(fmt.Sprintf(`((document.querySelector(%s)||{}).value||"").includes(%s)`, jsString(sel), jsString(want)), &ok,
		chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// set sets a form control's value and fires its input event, as typing
// would.
func set(sel, value string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.value = %s; e.dispatchEvent(new Event("input", {bubbles: true})); return true })()`,
		jsString(sel), jsString(value)), nil)
}

func click(sel string) chromedp.Action { return chromedp.Click(sel, chromedp.ByQuery) }

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the viewport as name (PNG) in the screenshot directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	var buf []byte
	b.run("screenshot "+name, chromedp.CaptureScreenshot(&buf))
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

// TestExplorerInBrowser drives the Data Explorer in headless Chromium
// against a real server: a refused key, sign-in, a database, container and
// item created and the item edited through the page, a query and its
// charge, a query error, a stored procedure executed, a trigger and a UDF
// created (the UDF used in a query), throughput and TTL
// edited, a hot key appearing
// in the partitions view under a load the test starts, a split appearing,
// the advisor's ranking, a read-only session without write controls, an
// expired session, a stopped server and its restart. Every step reads what the page
// shows; the server is checked through its API where the page wrote.
func TestExplorerInBrowser(t *testing.T) {
	b := newBrowser(t)
	const readOnlyKey = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) {
		c.Engine.RateLimit = "on"
		c.Auth.ReadOnlyKey = readOnlyKey
	}})
	ctx := t.Context()
	base := strings.TrimSuffix(s.Endpoint, "/")

	// A key the server does not know is refused in the page.
	b.run("open the explorer", chromedp.Navigate(base+"/_explorer/"), chromedp.WaitVisible("#key", chromedp.ByQuery))
	b.run("sign in with a bad key", set("#key", "AAAAAAAAAAAAAAAAAAAAAA=="), click("#signin-button"))
	b.waitText("bad key message", "#signin-error", "The key was refused (401)")

	b.run("sign in", set("#key", s.Key), click("#signin-button"), chromedp.WaitVisible("#tree-body", chromedp.ByQuery))
	b.waitText("signed in", "#access", "read-write key")

	// A database, a container, an item; then the item edited.
	b.run("create a database", click("#new-db summary"), set("#new-db-id", "shop"), click("#new-db-form button[type=submit]"))
	b.waitText("database listed", ".db-name", "shop")
	b.run("create a container", click("details.new-coll summary"),
		set("input[data-field=container-id]", "orders"), set("input[data-field=partition-key]", "/customerId"),
		click("details.new-coll button[type=submit]"))
	b.waitText("container opened", ".coll-title", "shop / orders")
	b.run("new item", click("#item-new"), set("#item-json", `{"id": "o1", "customerId": "c42", "total": 12.5}`), click("#item-save"))
	b.waitText("item created", "#item-result", "Created o1")
	b.run("edit the item", set("#item-json", `{"id": "o1", "customerId": "c42", "total": 20}`), click("#item-save"))
	b.waitText("item saved", "#item-result", "Saved o1")
	resp, body, err := s.Do(ctx, "GET", "/dbs/shop/colls/orders/docs/o1", map[string]string{"x-ms-documentdb-partitionkey": `["c42"]`}, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("read the edited item: %v %v %s", err, resp, body)
	}
	var item struct{ Total float64 }
	if err := json.Unmarshal(body, &item); err != nil || item.Total != 20 {
		t.Errorf("edited item = %s, want total 20", body)
	}
	// A save replaces the version the editor opened: changed meanwhile,
	// it is refused (412) rather than overwritten (an explorer hunt).
	if resp, body, err := s.Do(ctx, "PUT", "/dbs/shop/colls/orders/docs/o1", map[string]string{"Content-Type": "application/json",
		"x-ms-documentdb-partitionkey": `["c42"]`}, []byte(`{"id":"o1","customerId":"c42","total":20,"by":"someone else"}`)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("change o1 behind the editor: %v %v %s", err, resp, body)
	}
	b.run("save over a change", set("#item-json", `{"id": "o1", "customerId": "c42", "total": 21}`), click("#item-save"))
	b.waitText("stale save refused", "#item-result", "412")
	// Opened and saved unchanged, an integer past 2^53 stays as it was
	// (the explorer rewrote 9007199254740993 as 9007199254740992).
	if resp, body, err := s.Do(ctx, "POST", "/dbs/shop/colls/orders/docs", map[string]string{"Content-Type": "application/json",
		"x-ms-documentdb-partitionkey": `["c42"]`}, []byte(`{"id":"big","customerId":"c42","big":9007199254740993,"ratio":1.10}`)); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create big: %v %v %s", err, resp, body)
	}
	b.run("open and save the big item", click("#items-load"), chromedp.WaitVisible(`button.item[data-id="big"]`, chromedp.ByQuery),
		click(`button.item[data-id="big"]`), chromedp.WaitVisible("#item-save", chromedp.ByQuery))
	b.waitValue("big number shown as stored", "#item-json", "9007199254740993")
	b.run("save the big item", click("#item-save"))
	b.waitText("big item saved", "#item-result", "Saved big")
	if resp, body, err := s.Do(ctx, "GET", "/dbs/shop/colls/orders/docs/big", map[string]string{"x-ms-documentdb-partitionkey": `["c42"]`}, nil); err != nil ||
		resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"big":9007199254740993`) || !strings.Contains(string(body), `"ratio":1.10`) {
		t.Errorf("the big item after an unchanged save: %v %v %s, want big 9007199254740993 and ratio 1.10 as written", err, resp, body)
	}
	b.run("invalid JSON", set("#item-json", `{"id": "o1",`))
	b.waitText("invalid JSON message", "#item-json-msg", "Invalid")
	b.screenshot("explorer-items.png")
	for i := 2; i <= 5; i++ { // more items for the query screenshot, through the API
		doc := fmt.Sprintf(`{"id":"o%d","customerId":"c%d","total":%d,"status":"open"}`, i, 40+i%3, i*7)
		if resp, body, err := s.Do(ctx, "POST", "/dbs/shop/colls/orders/docs", map[string]string{"Content-Type": "application/json",
			"x-ms-documentdb-partitionkey": fmt.Sprintf(`["c%d"]`, 40+i%3)}, []byte(doc)); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %v %v %s", doc, err, resp, body)
		}
	}

	// A query, its charge, the table view; then a query error.
	b.run("query tab", click("#tab-query"), chromedp.WaitVisible("#query-text", chromedp.ByQuery),
		set("#query-text", "SELECT c.id, c.customerId, c.total FROM c WHERE c.total > 10"), click("#query-run"))
	b.waitText("query results", "#query-json", `"o1"`)
	charge, err := strconv.ParseFloat(b.text("#query-charge"), 64)
	if err != nil || charge <= 0 {
		t.Errorf("query charge shown = %q, want a positive number of RU", b.text("#query-charge"))
	}
	b.run("table view", click("#qmode-table"))
	b.waitText("results as a table", "#query-table th", "customerId")
	b.run("query metrics", click("#query-metrics summary"))
	b.waitText("query metrics shown", "#query-metrics th", "totalExecutionTimeInMs")
	b.screenshot("explorer-query.png")
	// Across partitions the explorer's queries are run whole by the server
	// (they were refused as the gateway refuses an SDK's), and Explain
	// needs no partition key.
	b.run("cross-partition count", click("#qmode-json"), set("#query-text", "SELECT VALUE COUNT(1) FROM c"), click("#query-run"))
	b.waitText("count across partitions", "#query-json", "6")
	b.run("explain without a key", click("#query-explain"))
	b.run("plan shown", chromedp.WaitVisible("#explain-text", chromedp.ByQuery))
	b.run("bad query", set("#query-text", "SELEC nonsense FROM"), click("#query-run"))
	b.waitText("query error shown", "#query-out .error", "400")

	// A stored procedure, created and executed with a partition key and arguments.
	b.run("scripts tab", click("#tab-scripts"), chromedp.WaitVisible("#new-sprocs", chromedp.ByQuery), click("#new-sprocs"),
		set("#script-id", "hello"), set("#script-body", `function hello(name) { getContext().getResponse().setBody({greeting: "hello " + name}); }`),
		click("#script-save"))
	b.waitText("sproc saved", "#script-result", "Saved hello")
	b.run("execute the sproc", set("#sproc-pk", `"c42"`), set("#sproc-args", `["world"]`), click("#sproc-run"))
	b.waitText("sproc result", "#sproc-output", "hello world")
	b.screenshot("explorer-scripts.png")
	// A trigger and a UDF; the UDF then used by a query.
	b.run("new trigger", click("#new-triggers"), set("#script-id", "stamp"), chromedp.SetValue("#trigger-type", "Pre", chromedp.ByQuery),
		chromedp.SetValue("#trigger-op", "Create", chromedp.ByQuery), click("#script-save"))
	b.waitText("trigger saved", "#script-result", "Saved stamp")
	b.waitText("trigger listed", `button.script[data-kind="triggers"]`, "stamp")
	b.run("new udf", click("#new-udfs"), set("#script-id", "double"), set("#script-body", "function double(x) { return x * 2; }"), click("#script-save"))
	b.waitText("udf saved", "#script-result", "Saved double")
	b.run("query with the udf", click("#tab-query"), chromedp.WaitVisible("#query-text", chromedp.ByQuery),
		set("#query-text", "SELECT VALUE udf.double(c.total) FROM c WHERE c.id = 'o1'"), set("#query-pk", `"c42"`), click("#query-run"))
	b.waitText("udf result", "#query-json", "40")

	// Settings: the throughput edited, then the default TTL.
	b.run("settings tab", click("#tab-settings"), chromedp.WaitVisible("#set-ru", chromedp.ByQuery), set("#set-ru", "500"), click("#set-ru-save"))
	b.waitText("throughput saved", "#settings-msg", "Throughput set to 500 RU/s")
	b.run("set a default TTL", set("#set-ttl", "3600"), click("#settings-save"))
	b.waitText("settings saved", "#settings-msg", "Saved")
	resp, body, err = s.Do(ctx, "GET", "/dbs/shop/colls/orders", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"defaultTtl":3600`) {
		t.Errorf("container after the settings were saved: %v %v %s, want defaultTtl 3600", err, resp, body)
	}
	resp, body, err = s.Do(ctx, "GET", "/offers", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"offerThroughput":500`) {
		t.Errorf("offers after the throughput was saved: %v %v %s, want 500 RU/s", err, resp, body)
	}

	// A hot key under load, then a split, in the partitions view.
	if resp, body, err := s.Do(ctx, "POST", "/dbs/shop/colls", map[string]string{"Content-Type": "application/json", "x-ms-offer-throughput": "400"},
		[]byte(`{"id":"telemetry","partitionKey":{"paths":["/device"],"kind":"Hash","version":2}}`)); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create telemetry: %v %v %s", err, resp, body)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() { load(loadCtx, s, w) })
	}
	defer func() {
		stopLoad()
		wg.Wait()
	}()
	b.run("open telemetry", click("#refresh-tree"), chromedp.WaitVisible(`button.coll[data-coll="telemetry"]`, chromedp.ByQuery),
		click(`button.coll[data-coll="telemetry"]`))
	b.waitText("container opened", ".coll-title", "shop / telemetry")
	b.run("partitions tab", click("#tab-partitions"), chromedp.WaitVisible("#epk-bar", chromedp.ByQuery))
	b.waitText("hot key shown", "#hot-keys .hot-name", "hot-device")
	b.waitText("hot key marked in the table", "li.hot-key", "hot-device")
	if resp, body, err := s.Do(ctx, "POST", "/_partita/dbs/shop/colls/telemetry/pkranges/0/split", nil, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("split: %v %v %s", err, resp, body)
	}
	b.waitText("split shown", "#split-events li", "partition 0 split into")
	b.waitText("two partitions", "#partitions-stamp", "2 physical partitions")
	b.waitText("hot key still shown after the split", "#hot-keys .hot-name", "hot-device")
	b.screenshot("explorer-partitions.png")
	stopLoad()
	wg.Wait()
	b.run("split from the page", click(`button.split-button[data-id="2"]`))
	b.waitText("page split shown", "#split-events li", "partition 2 split into")
	b.waitText("three partitions", "#partitions-stamp", "3 physical partitions")
	b.run("advise", click("#advise-run"))
	b.waitText("advice shown", "#advise-out", "Recommended partition key")
	if rec := b.text("#advise-recommendation"); rec == "" {
		t.Errorf("advice shows no recommendation: %q", b.text("#advise-out"))
	}

	// An expired session asks to sign in again.
	b.run("expire the session", chromedp.Evaluate(`sessionStorage.setItem("partita.expires", "0")`, nil), chromedp.Reload())
	b.waitText("expired session message", "#signin-error", "session expired")

	// The read-only key reads but is offered no writes.
	b.run("sign in read-only", set("#key", readOnlyKey), click("#signin-button"), chromedp.WaitVisible(`button.coll[data-coll="orders"]`, chromedp.ByQuery))
	b.waitText("read-only badge", "#access", "read-only key")
	b.run("open orders read-only", click(`button.coll[data-coll="orders"]`), chromedp.WaitVisible("#items-load", chromedp.ByQuery))
	b.waitText("items listed read-only", "button.item", "o1")
	var writesShown bool
	b.run("writes hidden", chromedp.Evaluate(`["#new-db", "#item-new", "details.new-coll"].some(s => { const e = document.querySelector(s); return e && e.offsetParent !== null })`, &writesShown))
	if writesShown {
		t.Errorf("read-only session shows write controls")
	}
	b.run("sign out", click("#signout"), chromedp.WaitVisible("#key", chromedp.ByQuery))

	// A stopped server is named in the page, which keeps retrying.
	b.run("sign in again", set("#key", s.Key), click("#signin-button"), chromedp.WaitVisible(`button.coll[data-coll="telemetry"]`, chromedp.ByQuery),
		click(`button.coll[data-coll="telemetry"]`), chromedp.WaitVisible("#tab-partitions", chromedp.ByQuery), click("#tab-partitions"))
	b.waitText("partitions again", "#partitions-stamp", "physical partitions")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	b.waitText("server gone message", "#banner", "Cannot reach the server")

	// The server restarted (same address, same data): the page carries on
	// by itself, the message gone.
	addr := strings.TrimPrefix(base, "https://")
	s2 := testserver.Start(t, testserver.Options{DataDir: s.DataDir, Configure: func(c *config.Config) {
		c.Server.Addr = addr
		c.Auth.ReadOnlyKey = readOnlyKey
	}})
	if s2.Endpoint != s.Endpoint {
		t.Fatalf("restarted at %s, want %s", s2.Endpoint, s.Endpoint)
	}
	var back bool
	b.run("page recovers after the restart", chromedp.Poll(`document.getElementById("banner").hidden && document.getElementById("partitions-stamp").textContent.includes("3 physical partitions")`, &back,
		chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// load writes to one hot logical partition (and a few cold ones) of
// shop/telemetry until ctx ends, a few hundred requests a second, more
// than its 400 RU/s allow: the hot key is throttled.
func load(ctx context.Context, s *testserver.Server, worker int) {
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		dev := "hot-device"
		if i%10 == 9 {
			dev = fmt.Sprintf("cold-%d", i%7)
		}
		doc := fmt.Sprintf(`{"id":"w%d-%d","device":%q,"reading":%d}`, worker, i%500, dev, i)
		_, _, _ = s.Do(ctx, "POST", "/dbs/shop/colls/telemetry/docs", map[string]string{"Content-Type": "application/json",
			"x-ms-documentdb-is-upsert": "True", "x-ms-documentdb-partitionkey": fmt.Sprintf("[%q]", dev)}, []byte(doc))
	}
}

// TestExplorerRequest401: a 401 that is about the request, not the key —
// under --emulator-compat an item whose id holds "/" is created but cannot
// be addressed (401) — shows its error and keeps the session (it signed
// the user out: a security review, data planted by anyone who can write);
// a key the server refuses still signs out.
func TestExplorerRequest401(t *testing.T) {
	b := newBrowser(t)
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.API.EmulatorCompat = true }})
	ctx := t.Context()
	base := strings.TrimSuffix(s.Endpoint, "/")
	for _, r := range []struct{ path, pk, body string }{
		{"/dbs", "", `{"id":"d"}`},
		{"/dbs/d/colls", "", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`},
		{"/dbs/d/colls/c/docs", `["a"]`, `{"id":"evil/x","pk":"a"}`},
	} {
		h := map[string]string{"Content-Type": "application/json"}
		if r.pk != "" {
			h["x-ms-documentdb-partitionkey"] = r.pk
		}
		if resp, body, err := s.Do(ctx, "POST", r.path, h, []byte(r.body)); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s %s: %v %v %s", r.path, r.body, err, resp, body)
		}
	}
	b.run("open the explorer", chromedp.Navigate(base+"/_explorer/"), chromedp.WaitVisible("#key", chromedp.ByQuery))
	b.run("sign in", set("#key", s.Key), click("#signin-button"), chromedp.WaitVisible(`button.coll[data-coll="c"]`, chromedp.ByQuery))
	b.run("open the container", click(`button.coll[data-coll="c"]`), chromedp.WaitVisible(`button.item[data-id="evil/x"]`, chromedp.ByQuery))
	b.run("save the item", click(`button.item[data-id="evil/x"]`), chromedp.WaitVisible("#item-save", chromedp.ByQuery), click("#item-save"))
	b.waitText("the request's error", "#item-result", "cannot be addressed")
	time.Sleep(500 * time.Millisecond) // the key's check runs after the error is shown
	var signedIn bool
	b.run("still signed in", chromedp.Evaluate(`sessionStorage.getItem("partita.key") !== null && document.querySelector("#signin").hidden`, &signedIn))
	if !signedIn {
		t.Fatal("a 401 about the request signed the user out")
	}
	// A key the server refuses, found mid-session, signs out.
	b.run("refused key", chromedp.Evaluate(`sessionStorage.setItem("partita.key", "AAAAAAAAAAAAAAAAAAAAAA==")`, nil), chromedp.Reload())
	b.waitText("refused key message", "#signin-error", "The server refused the key (401)")
}

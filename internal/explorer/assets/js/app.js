// The Data Explorer: sign in, browse databases → containers → items,
// query, scripts, settings and the partitions view. Every call is a signed
// Cosmos DB request through cosmos.js; this file holds no other way in.

import { Client, CosmosError, NetworkError, importKey, isRawNumber, parseJSON, partitionKeyOf, path } from "./cosmos.js";
import { clear, field, fmtBytes, fmtNum, h } from "./dom.js";
import { analyze, colour, epkFraction, snapshot } from "./partitions.js";

const EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
// A session ends after this long without a successful request.
const SESSION_IDLE_MS = 60 * 60 * 1000;
const REFRESH_MS = 2000;
const PAGE_SIZE = 20;

const $ = (id) => document.getElementById(id);

const state = {
  client: null,
  readOnly: false,
  db: null,
  coll: null, // the container's definition
  tab: "items",
  timer: null, // the partitions view's refresh
  stop: () => {}, // stops the current view's background work
  gen: 0, // counts views shown: a view's background work stops when it is no longer current
};

// ---- messages ----

function banner(msg, kind = "error") {
  const b = $("banner");
  if (!msg) {
    b.hidden = true;
    b.textContent = "";
    return;
  }
  b.hidden = false;
  b.className = `banner ${kind}`;
  b.textContent = msg;
}

// describe turns any failure into one sentence for the page.
function describe(err) {
  if (err instanceof NetworkError) return err.message;
  if (err instanceof CosmosError) {
    const sub = err.sub ? `/${err.sub}` : "";
    const hint = err.status === 412 ? " It was changed since you opened it: open it again to see the change, then make yours." : "";
    return `${err.status}${sub} ${err.code ? err.code + ": " : ""}${err.message}${hint}`;
  }
  return String(err && err.message ? err.message : err);
}

// guard runs fn, showing a failure in the banner (or in target).
async function guard(fn, target) {
  try {
    const r = await fn();
    if (!target) banner(null);
    return r;
  } catch (err) {
    if (target) {
      clear(target, h("p", { class: "error", role: "alert" }, describe(err)));
    } else {
      banner(describe(err));
    }
    return undefined;
  }
}

// ---- session ----

function saveSession(key, readOnly) {
  sessionStorage.setItem("partita.key", key);
  sessionStorage.setItem("partita.readOnly", readOnly ? "1" : "0");
  touch();
}

function touch() {
  sessionStorage.setItem("partita.expires", String(Date.now() + SESSION_IDLE_MS));
}

function signOut(msg) {
  state.stop();
  state.gen++;
  state.client = null;
  sessionStorage.removeItem("partita.key");
  sessionStorage.removeItem("partita.readOnly");
  sessionStorage.removeItem("partita.expires");
  $("app").hidden = true;
  $("session").hidden = true;
  // Nothing of the session stays on the page (nor is found by a later one).
  clear($("tree-body"));
  clear($("main"));
  state.db = state.coll = null;
  $("signin").hidden = false;
  $("signin-error").textContent = msg || "";
  banner(null);
  $("key").value = "";
  $("key").focus();
}

const EXPIRED = "Your session expired after an hour without activity. Sign in again.";

function expired() {
  return Number(sessionStorage.getItem("partita.expires") || 0) < Date.now();
}

function makeClient(cryptoKey) {
  return new Client(cryptoKey, {
    onActivity: touch,
    beforeRequest: () => {
      if (!expired()) return;
      signOut(EXPIRED);
      throw new Error(EXPIRED);
    },
    onUnauthorized: async (err) => {
      // A 401 may be about the request rather than the key (under
      // --emulator-compat, an item whose id holds "/" cannot be addressed:
      // 401): sign out only when the account read is refused too, so that
      // data someone planted cannot end the session (a security review).
      try {
        await new Client(cryptoKey).get("/");
        return; // the key is good: the caller shows the request's error
      } catch (probeErr) {
        if (!(probeErr instanceof CosmosError && probeErr.status === 401)) return;
      }
      if (state.client) signOut(`The server refused the key (401): ${err.message} Sign in again.`);
    },
  });
}

// probeAccess reports whether the key may write: POST /dbs with no id is
// refused before it is read with 403 for a read-only key and with 400 for
// one that may write; nothing is created either way.
async function probeReadOnly(client) {
  try {
    await client.request("POST", "/dbs", { body: {} });
  } catch (err) {
    if (err instanceof CosmosError && err.status === 403) return true;
    if (err instanceof CosmosError && err.status === 400) return false;
    throw err;
  }
  return false;
}

async function signIn(key) {
  $("signin-error").textContent = "";
  let cryptoKey;
  try {
    cryptoKey = await importKey(key);
  } catch (err) {
    $("signin-error").textContent = err.message;
    return;
  }
  const probe = new Client(cryptoKey);
  try {
    await probe.get("/");
    const readOnly = await probeReadOnly(probe);
    saveSession(key, readOnly);
    await enter(cryptoKey, readOnly);
  } catch (err) {
    let msg = describe(err);
    if (err instanceof CosmosError && err.status === 401) msg = `The key was refused (401): ${err.message}`;
    $("signin-error").textContent = msg;
  }
}

async function enter(cryptoKey, readOnly) {
  state.client = makeClient(cryptoKey);
  state.readOnly = readOnly;
  document.body.classList.toggle("read-only", readOnly);
  $("signin").hidden = true;
  $("app").hidden = false;
  $("session").hidden = false;
  $("access").textContent = readOnly ? "read-only key" : "read-write key";
  await renderTree();
  clear($("main"), h("p", { class: "hint" }, "Choose a container on the left, or create a database."));
}

async function restore() {
  const key = sessionStorage.getItem("partita.key");
  if (!key) return signOut();
  if (expired()) return signOut(EXPIRED);
  try {
    await enter(await importKey(key), sessionStorage.getItem("partita.readOnly") === "1");
  } catch (err) {
    signOut(describe(err));
  }
}

// ---- tree ----

async function renderTree() {
  const body = $("tree-body");
  await guard(async () => {
    const dbs = await state.client.getAll("/dbs", "Databases");
    dbs.sort((a, b) => a.id.localeCompare(b.id));
    const list = h("ul", { class: "dbs" });
    for (const db of dbs) {
      const colls = await state.client.getAll(path("dbs", db.id, "colls"), "DocumentCollections");
      colls.sort((a, b) => a.id.localeCompare(b.id));
      list.append(
        h(
          "li",
          {},
          h("span", { class: "db-name" }, db.id),
          h(
            "ul",
            { class: "colls" },
            colls.map((c) =>
              h(
                "li",
                {},
                h(
                  "button",
                  {
                    type: "button",
                    class: "coll" + (state.db === db.id && state.coll && state.coll.id === c.id ? " selected" : ""),
                    "data-db": db.id,
                    "data-coll": c.id,
                    "aria-current": state.db === db.id && state.coll && state.coll.id === c.id ? "true" : null,
                    onclick: () => openContainer(db.id, c.id),
                  },
                  c.id,
                ),
              ),
            ),
          ),
          newContainerForm(db.id),
          confirmButton(`Delete database ${db.id}`, `Delete database ${db.id} and everything in it?`, async () => {
            await state.client.request("DELETE", path("dbs", db.id));
            if (state.db === db.id) {
              state.stop();
              state.db = state.coll = null;
              clear($("main"));
            }
            await renderTree();
          }),
        ),
      );
    }
    clear(body, dbs.length ? list : h("p", { class: "hint" }, "No databases yet."));
  }, body);
}

// confirmButton is a delete button that asks in the page (no dialogs).
function confirmButton(label, question, action) {
  const wrap = h("div", { class: "confirm writes" });
  const ask = () =>
    clear(
      wrap,
      h("span", { role: "status" }, question, " "),
      h("button", { type: "button", class: "danger", onclick: () => guard(action) }, "Delete"),
      h("button", { type: "button", onclick: reset }, "Cancel"),
    );
  const reset = () => clear(wrap, h("button", { type: "button", class: "danger-outline", onclick: ask }, label));
  reset();
  return wrap;
}

let formSeq = 0;

function newContainerForm(db) {
  const n = ++formSeq;
  const id = h("input", { id: `nc-id-${n}`, required: true, "data-field": "container-id" });
  const pk = h("input", { id: `nc-pk-${n}`, required: true, value: "/pk", "data-field": "partition-key" });
  const ru = h("input", { id: `nc-ru-${n}`, type: "number", min: 400, step: 100, value: 400, "data-field": "throughput" });
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        const paths = pk.value.split(",").map((s) => s.trim()).filter(Boolean);
        const def = { id: id.value.trim(), partitionKey: paths.length > 1 ? { paths, kind: "MultiHash", version: 2 } : { paths, kind: "Hash", version: 2 } };
        const headers = ru.value ? { "x-ms-offer-throughput": String(ru.value) } : {};
        await guard(async () => {
          await state.client.request("POST", path("dbs", db, "colls"), { body: def, headers });
          await renderTree();
          await openContainer(db, def.id);
        });
      },
    },
    field("Container id", id),
    field("Partition key path(s), comma-separated", pk),
    field("Throughput (RU/s, empty: the database's shared throughput)", ru),
    h("button", { type: "submit" }, "Create container"),
  );
  return h("details", { class: "writes new-coll" }, h("summary", {}, "New container"), form);
}

// ---- container ----

const TABS = [
  ["items", "Items"],
  ["query", "Query"],
  ["scripts", "Scripts"],
  ["partitions", "Partitions"],
  ["settings", "Settings"],
];

async function openContainer(db, coll, tab) {
  state.stop();
  state.gen++;
  const main = $("main");
  await guard(async () => {
    const def = (await state.client.get(path("dbs", db, "colls", coll))).body;
    state.db = db;
    state.coll = def;
    state.tab = tab || state.tab || "items";
    for (const b of document.querySelectorAll("button.coll")) {
      const sel = b.dataset.db === db && b.dataset.coll === coll;
      b.classList.toggle("selected", sel);
      if (sel) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
    const tabs = h("div", { role: "tablist", "aria-label": "Container views", class: "tabs" });
    const panel = h("section", { role: "tabpanel", id: "panel", tabindex: "0" });
    for (const [name, label] of TABS) {
      tabs.append(
        h(
          "button",
          {
            type: "button",
            role: "tab",
            id: `tab-${name}`,
            "aria-controls": "panel",
            "aria-selected": name === state.tab ? "true" : "false",
            tabIndex: name === state.tab ? 0 : -1,
            onclick: () => openContainer(db, coll, name),
            onkeydown: (e) => {
              const i = TABS.findIndex((t) => t[0] === name);
              const j = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 : null;
              if (j === null) return;
              e.preventDefault();
              const next = TABS[(j + TABS.length) % TABS.length][0];
              openContainer(db, coll, next).then(() => $(`tab-${next}`).focus());
            },
          },
          label,
        ),
      );
    }
    panel.setAttribute("aria-labelledby", `tab-${state.tab}`);
    const del = confirmButton(`Delete container ${coll}`, `Delete container ${coll} and every item, script and setting in it?`, async () => {
      await state.client.request("DELETE", path("dbs", db, "colls", coll));
      state.stop();
      state.coll = null;
      clear(main, h("p", { role: "status" }, `Deleted container ${coll}.`));
      await renderTree();
    });
    clear(
      main,
      h("div", { class: "coll-head" }, h("h2", { class: "coll-title" }, `${db} / ${coll}`, h("span", { class: "pk" }, ` partition key ${(def.partitionKey.paths || []).join(", ")}`)), del),
      tabs,
      panel,
    );
    const views = { items: itemsView, query: queryView, scripts: scriptsView, partitions: partitionsView, settings: settingsView };
    await views[state.tab](panel, db, def);
  }, main);
}

function collPath(db, def, ...rest) {
  return path("dbs", db, "colls", def.id, ...rest);
}

// parsePK reads a partition key value typed by the user: JSON ("a", 42,
// ["a","b"]) or, if that does not parse, a plain string. Empty: none.
function parsePK(text) {
  const t = text.trim();
  if (!t) return null;
  let v;
  try {
    v = JSON.parse(t);
  } catch {
    v = t;
  }
  return JSON.stringify(Array.isArray(v) ? v : [v]);
}

// jsonEditor returns a textarea that validates its JSON as one types,
// with a message tied to it; ok() reports whether it holds an object.
function jsonEditor(id, label, text, { rows = 16, object = true } = {}) {
  const msg = h("p", { id: `${id}-msg`, class: "valid", "aria-live": "polite" });
  const ta = h("textarea", { id, rows, spellcheck: false, "aria-describedby": `${id}-msg`, class: "code" });
  ta.value = text;
  const check = () => {
    try {
      const v = parseJSON(ta.value);
      if (object && (v === null || typeof v !== "object" || Array.isArray(v))) throw new Error("the item must be a JSON object");
      if (object && typeof v.id !== "string") throw new Error('the item needs a string "id"');
      msg.textContent = "Valid JSON";
      msg.className = "valid";
      ta.removeAttribute("aria-invalid");
      return v;
    } catch (e) {
      msg.textContent = `Invalid: ${e.message}`;
      msg.className = "error";
      ta.setAttribute("aria-invalid", "true");
      return undefined;
    }
  };
  ta.addEventListener("input", check);
  check();
  return { el: h("div", { class: "field" }, h("label", { for: id }, label), ta, msg), ta, value: check };
}

// ---- items ----

async function itemsView(panel, db, def) {
  const pkInput = h("input", { id: "items-pk", placeholder: 'e.g. "c42" — empty: all partitions' });
  const list = h("ul", { class: "item-list", "aria-label": "Items" });
  const more = h("button", { type: "button", id: "items-more", hidden: true }, "Load more");
  const editor = h("div", { class: "item-editor" });
  const info = h("p", { class: "charge", "aria-live": "polite" });
  let continuation = null;
  let loadedPK = null; // the partition key the list (and continuation) is of

  const load = async (append) => {
    await guard(async () => {
      const headers = { "x-ms-max-item-count": String(PAGE_SIZE) };
      const pk = parsePK(pkInput.value);
      // "Load more" after the partition key was changed starts the new
      // key's list: it appended the new key's items to the old list (an
      // explorer hunt).
      if (pk !== loadedPK) append = false;
      loadedPK = pk;
      if (pk) headers["x-ms-documentdb-partitionkey"] = pk;
      if (append && continuation) headers["x-ms-continuation"] = continuation;
      const r = await state.client.get(collPath(db, def, "docs"), headers);
      continuation = r.headers.get("x-ms-continuation");
      if (!append) list.replaceChildren();
      for (const doc of r.body.Documents || []) {
        const pkv = partitionKeyOf(doc, def.partitionKey);
        list.append(h("li", {}, h("button", { type: "button", class: "item", "data-id": doc.id, onclick: () => edit(doc) }, doc.id, h("span", { class: "pk" }, ` ${pkv}`))));
      }
      if (!list.children.length) list.append(h("li", { class: "hint" }, "No items."));
      more.hidden = !continuation;
      const n = (r.body.Documents || []).length;
      info.textContent = `Read ${n} item${n === 1 ? "" : "s"}${continuation ? " (more to load)" : ""}: ${fmtNum(r.charge)} RU`;
    }, list);
  };

  const edit = (doc) => {
    const isNew = !doc;
    const ed = jsonEditor("item-json", isNew ? "New item (JSON)" : `Item ${doc.id}`, JSON.stringify(doc || { id: "", [pkPropName(def)]: "" }, null, 2));
    const result = h("p", { class: "charge", id: "item-result", "aria-live": "polite" });
    const save = h(
      "button",
      {
        type: "button",
        id: "item-save",
        class: "writes",
        onclick: async () => {
          const v = ed.value();
          if (!v) {
            result.textContent = "Fix the JSON first.";
            return;
          }
          const pk = partitionKeyOf(v, def.partitionKey);
          await guard(async () => {
            // A save replaces the version the editor opened, not whatever
            // is stored by then (If-Match): it overwrote a change made
            // meanwhile (an explorer hunt); a 412 says to open it again.
            const r = isNew
              ? await state.client.request("POST", collPath(db, def, "docs"), { body: v, headers: { "x-ms-documentdb-partitionkey": pk } })
              : await state.client.request("PUT", collPath(db, def, "docs", doc.id), {
                  body: v,
                  headers: { "x-ms-documentdb-partitionkey": partitionKeyOf(doc, def.partitionKey), ...(doc._etag ? { "If-Match": doc._etag } : {}) },
                });
            // Said once the editor holds the saved item: said before, an edit
            // made at once went into the editor being replaced, and was lost
            // (a flake hunt of the browser test).
            await load(false);
            edit(r.body);
            $("item-result").textContent = `${isNew ? "Created" : "Saved"} ${v.id}: ${fmtNum(r.charge)} RU`;
          }, result);
        },
      },
      isNew ? "Create" : "Save",
    );
    const del = isNew
      ? null
      : confirmButton(`Delete item`, `Delete item ${doc.id}?`, async () => {
          await state.client.request("DELETE", collPath(db, def, "docs", doc.id), { headers: { "x-ms-documentdb-partitionkey": partitionKeyOf(doc, def.partitionKey) } });
          clear(editor, h("p", { role: "status" }, `Deleted ${doc.id}.`));
          await load(false);
        });
    clear(editor, ed.el, h("div", { class: "row" }, save, del), result);
    ed.ta.focus();
  };

  clear(
    panel,
    h(
      "div",
      { class: "row" },
      field("Partition key", pkInput),
      h("button", { type: "button", id: "items-load", onclick: () => load(false) }, "Load"),
      h("button", { type: "button", id: "item-new", class: "writes", onclick: () => edit(null) }, "New item"),
    ),
    info,
    h("div", { class: "split" }, h("div", {}, list, more), editor),
  );
  more.addEventListener("click", () => load(true));
  await load(false);
}

// pkPropName is the top-level property of the first partition key path,
// for a new item's template.
function pkPropName(def) {
  const p = (def.partitionKey.paths || ["/pk"])[0];
  return p.split("/")[1] || "pk";
}

// ---- query ----

function parseMetrics(s) {
  if (!s) return [];
  return s.split(";").filter(Boolean).map((kv) => kv.split("="));
}

async function queryView(panel, db, def) {
  const sql = h("textarea", { id: "query-text", rows: 5, spellcheck: false, class: "code" });
  sql.value = "SELECT * FROM c";
  const pkInput = h("input", { id: "query-pk", placeholder: "empty: cross-partition" });
  const out = h("div", { id: "query-out" });
  const modeJSON = h("input", { type: "radio", name: "qmode", id: "qmode-json", checked: true });
  const modeTable = h("input", { type: "radio", name: "qmode", id: "qmode-table" });
  let cont = null;
  let pages = [];

  const render = () => {
    const last = pages[pages.length - 1];
    if (!last) return;
    const docs = pages.flatMap((p) => p.docs);
    const total = pages.reduce((a, p) => a + p.charge, 0);
    const metrics = parseMetrics(last.metrics);
    const results = modeTable.checked ? table(docs) : h("pre", { class: "code", id: "query-json", tabindex: "0" }, JSON.stringify(docs, null, 2));
    clear(
      out,
      h(
        "p",
        { class: "charge", role: "status" },
        `Page ${pages.length}: ${last.docs.length} results, request charge `,
        h("strong", { id: "query-charge" }, fmtNum(last.charge)),
        " RU",
        pages.length > 1 ? ` (${fmtNum(total)} RU over ${pages.length} pages, ${docs.length} results)` : "",
      ),
      cont ? h("button", { type: "button", id: "query-next", onclick: () => run(true) }, "Next page") : null,
      results,
      metrics.length
        ? h(
            "details",
            { id: "query-metrics" },
            h("summary", {}, "Query metrics (this page)"),
            h("table", {}, h("tbody", {}, metrics.map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, v))))),
          )
        : null,
      last.plan ? h("details", { id: "query-plan" }, h("summary", {}, "Physical plan (this page)"), h("pre", { class: "code" }, JSON.stringify(last.plan, null, 2))) : null,
    );
  };

  const run = async (next) => {
    if (!next) {
      pages = [];
      cont = null;
    }
    clear(out, h("p", { role: "status" }, "Running…"));
    await guard(async () => {
      const headers = { "x-ms-max-item-count": "100", "x-ms-documentdb-populatequerymetrics": "True" };
      const pk = parsePK(pkInput.value);
      if (pk) headers["x-ms-documentdb-partitionkey"] = pk;
      if (next && cont) headers["x-ms-continuation"] = cont;
      const r = await state.client.query(collPath(db, def, "docs"), sql.value, [], headers);
      cont = r.headers.get("x-ms-continuation");
      let plan = null;
      const ph = r.headers.get("x-partita-query-plan");
      if (ph) {
        try {
          plan = JSON.parse(decodeURIComponent(ph));
        } catch {
          plan = null;
        }
      }
      pages.push({ docs: r.body.Documents || [], charge: r.charge, metrics: r.headers.get("x-ms-documentdb-query-metrics"), plan });
      render();
    }, out);
  };

  const explain = async () => {
    await guard(async () => {
      // As a query is sent: without a partition key, across partitions
      // (Explain failed with "Cross partition query is required but
      // disabled" unless a key was typed: an explorer hunt).
      const headers = { "x-ms-documentdb-query-enablecrosspartition": "True", "x-partita-gateway-query": "full" };
      const pk = parsePK(pkInput.value);
      if (pk) headers["x-ms-documentdb-partitionkey"] = pk;
      const r = await state.client.request("POST", path("_partita", "dbs", db, "colls", def.id, "explain"), {
        body: JSON.stringify({ query: sql.value, parameters: [] }),
        headers: { "Content-Type": "application/query+json", ...headers },
      });
      clear(out, h("h3", {}, "Plan"), h("pre", { class: "code", id: "explain-text" }, r.body.text));
    }, out);
  };

  sql.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run(false);
    }
  });
  modeJSON.addEventListener("change", render);
  modeTable.addEventListener("change", render);
  clear(
    panel,
    h(
      "form",
      {
        onsubmit: (e) => {
          e.preventDefault();
          run(false);
        },
      },
      h("div", { class: "field" }, h("label", { for: "query-text" }, "SQL query (Ctrl+Enter runs it)"), sql),
      h(
        "div",
        { class: "row" },
        field("Partition key", pkInput),
        h("button", { type: "submit", id: "query-run" }, "Run query"),
        h("button", { type: "button", id: "query-explain", class: "writes", onclick: explain }, "Explain"),
        h("fieldset", { class: "inline" }, h("legend", {}, "Results as"), modeJSON, h("label", { for: "qmode-json" }, "JSON"), modeTable, h("label", { for: "qmode-table" }, "Table")),
      ),
    ),
    out,
  );
}

// table renders query results as a table: one column per top-level
// property (in first-seen order), or one "value" column for non-objects.
function table(docs) {
  const cols = [];
  const seen = new Set();
  let scalar = false;
  const scalarOf = (d) => d === null || typeof d !== "object" || Array.isArray(d) || isRawNumber(d);
  for (const d of docs) {
    if (scalarOf(d)) {
      scalar = true;
      continue;
    }
    for (const k of Object.keys(d)) if (!seen.has(k) && cols.length < 40) (seen.add(k), cols.push(k));
  }
  if (scalar) cols.unshift("(value)");
  const cell = (v) => (v === undefined ? "" : isRawNumber(v) ? v.rawJSON : typeof v === "object" ? JSON.stringify(v) : String(v));
  return h(
    "div",
    { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Query results" },
    h(
      "table",
      { id: "query-table" },
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        {},
        docs.map((d) =>
          h(
            "tr",
            {},
            cols.map((c) => h("td", {}, c === "(value)" ? (scalarOf(d) ? cell(d) : "") : scalarOf(d) ? "" : cell(d[c]))),
          ),
        ),
      ),
    ),
  );
}

// ---- scripts ----

const SCRIPT_KINDS = [
  ["sprocs", "Stored procedures", "StoredProcedures", "function run(arg) {\n  getContext().getResponse().setBody({ hello: arg });\n}"],
  ["triggers", "Triggers", "Triggers", "function trigger() {\n  var item = getContext().getRequest().getBody();\n  getContext().getRequest().setBody(item);\n}"],
  ["udfs", "User-defined functions", "UserDefinedFunctions", "function udf(x) {\n  return x;\n}"],
];

async function scriptsView(panel, db, def) {
  const editor = h("div", { class: "script-editor" });
  const lists = h("div", { class: "script-lists" });
  clear(panel, h("div", { class: "split" }, lists, editor));

  const loadLists = async () => {
    lists.replaceChildren();
    for (const [kind, title, feed, template] of SCRIPT_KINDS) {
      const items = await state.client.getAll(collPath(db, def, kind), feed);
      lists.append(
        h(
          "section",
          { "aria-label": title },
          h("h3", {}, title),
          h(
            "ul",
            {},
            items.map((s) => h("li", {}, h("button", { type: "button", class: "script", "data-kind": kind, "data-id": s.id, onclick: () => openScript(kind, s, template) }, s.id))),
            items.length ? null : h("li", { class: "hint" }, "None."),
          ),
          h("button", { type: "button", class: "writes", id: `new-${kind}`, onclick: () => openScript(kind, null, template) }, `New ${title.replace(/s$/, "").toLowerCase()}`),
        ),
      );
    }
  };

  const openScript = (kind, s, template) => {
    const isNew = !s;
    const id = h("input", { id: "script-id", value: s ? s.id : "", readOnly: !isNew, required: true });
    const body = h("textarea", { id: "script-body", rows: 14, spellcheck: false, class: "code" });
    body.value = s ? s.body : template;
    const result = h("div", { id: "script-result", "aria-live": "polite" });
    const extra = [];
    let ttype, top;
    if (kind === "triggers") {
      ttype = h("select", { id: "trigger-type" }, ["Pre", "Post"].map((v) => h("option", { value: v, selected: s && s.triggerType === v }, v)));
      top = h("select", { id: "trigger-op" }, ["All", "Create", "Replace", "Delete", "Update"].map((v) => h("option", { value: v, selected: s && s.triggerOperation === v }, v)));
      extra.push(field("Trigger type", ttype), field("Operation", top));
    }
    const save = h(
      "button",
      {
        type: "button",
        id: "script-save",
        class: "writes",
        onclick: () =>
          guard(async () => {
            const def2 = { id: id.value.trim(), body: body.value };
            if (kind === "triggers") Object.assign(def2, { triggerType: ttype.value, triggerOperation: top.value });
            const r = isNew
              ? await state.client.request("POST", collPath(db, def, kind), { body: def2 })
              : await state.client.request("PUT", collPath(db, def, kind, def2.id), { body: def2, headers: s._etag ? { "If-Match": s._etag } : {} });
            await loadLists();
            openScript(kind, r.body, template);
            $("script-result").replaceChildren(h("p", { role: "status" }, `Saved ${def2.id}: ${fmtNum(r.charge)} RU`));
          }, result),
      },
      isNew ? "Create" : "Save",
    );
    const del = isNew
      ? null
      : confirmButton("Delete", `Delete ${s.id}?`, async () => {
          await state.client.request("DELETE", collPath(db, def, kind, s.id));
          clear(editor, h("p", { role: "status" }, `Deleted ${s.id}.`));
          await loadLists();
        });
    let exec = null;
    if (kind === "sprocs" && !isNew) {
      const pk = h("input", { id: "sproc-pk", placeholder: '"c42"' });
      const args = h("input", { id: "sproc-args", value: "[]", class: "code" });
      exec = h(
        "form",
        {
          class: "writes exec",
          onsubmit: (e) => {
            e.preventDefault();
            guard(async () => {
              let a;
              try {
                a = JSON.parse(args.value || "[]");
              } catch (err) {
                throw new Error(`Arguments are not valid JSON: ${err.message}`);
              }
              const headers = { "x-ms-documentdb-script-enable-logging": "true" };
              const p = parsePK(pk.value);
              if (p) headers["x-ms-documentdb-partitionkey"] = p;
              const r = await state.client.request("POST", collPath(db, def, "sprocs", s.id), { body: JSON.stringify(Array.isArray(a) ? a : [a]), headers });
              const log = r.headers.get("x-ms-documentdb-script-log-results");
              clear(
                result,
                h("p", { role: "status" }, "Result, request charge ", h("strong", { id: "sproc-charge" }, fmtNum(r.charge)), " RU"),
                h("pre", { class: "code", id: "sproc-output" }, JSON.stringify(r.body, null, 2)),
                log ? h("pre", { class: "code" }, decodeURIComponent(log)) : null,
              );
            }, result);
          },
        },
        h("h4", {}, "Execute"),
        h("div", { class: "row" }, field("Partition key", pk), field("Arguments (JSON array)", args), h("button", { type: "submit", id: "sproc-run" }, "Execute")),
      );
    }
    clear(
      editor,
      h("h3", {}, isNew ? "New script" : s.id),
      field("Id", id),
      extra,
      h("div", { class: "field" }, h("label", { for: "script-body" }, "Body (JavaScript)"), body),
      h("div", { class: "row" }, save, del),
      exec,
      result,
    );
    body.focus();
  };

  await guard(loadLists, lists);
}

// ---- settings ----

async function settingsView(panel, db, def) {
  let current = def; // the definition as last read or saved
  const ttl = h("input", { id: "set-ttl", type: "number", value: def.defaultTtl ?? "", placeholder: "off" });
  const idx = jsonEditor("set-indexing", "Indexing policy", JSON.stringify(def.indexingPolicy || {}, null, 2), { rows: 12, object: false });
  const msg = h("div", { id: "settings-msg", "aria-live": "polite" });
  const offerBox = h("div", { id: "offer" });
  clear(
    panel,
    h(
      "dl",
      { class: "props" },
      h("dt", {}, "Partition key"),
      h("dd", {}, h("code", {}, JSON.stringify(def.partitionKey))),
      h("dt", {}, "Unique keys"),
      h("dd", {}, h("code", {}, JSON.stringify((def.uniqueKeyPolicy && def.uniqueKeyPolicy.uniqueKeys) || []))),
      h("dt", {}, "_rid"),
      h("dd", {}, def._rid),
    ),
    offerBox,
    field("Default time to live (seconds; -1: on without a default; empty: off)", ttl),
    idx.el,
    h(
      "button",
      {
        type: "button",
        class: "writes",
        id: "settings-save",
        onclick: () =>
          guard(async () => {
            const policy = idx.value();
            if (policy === undefined) throw new Error("Fix the indexing policy's JSON first.");
            const next = { ...current, indexingPolicy: policy };
            if (ttl.value === "") delete next.defaultTtl;
            else next.defaultTtl = Number(ttl.value);
            // Replaces the definition the page shows, not one changed
            // meanwhile (If-Match; a 412 says to open it again).
            const r = await state.client.request("PUT", collPath(db, def), { body: next, headers: current._etag ? { "If-Match": current._etag } : {} });
            state.coll = current = r.body;
            clear(msg, h("p", { role: "status" }, `Saved: ${fmtNum(r.charge)} RU`));
          }, msg),
      },
      "Save settings",
    ),
    msg,
  );
  await guard(async () => {
    const r = await state.client.query("/offers", "SELECT * FROM root r WHERE r.offerResourceId = @rid", [{ name: "@rid", value: def._rid }]);
    const offer = (r.body.Offers || [])[0];
    if (!offer) {
      clear(offerBox, h("p", {}, "Throughput: shared with the database (or none)."));
      return;
    }
    const auto = offer.content && offer.content.offerAutopilotSettings;
    const cur = auto ? auto.maxThroughput : offer.content.offerThroughput;
    const ru = h("input", { id: "set-ru", type: "number", min: 400, step: 100, value: cur });
    clear(
      offerBox,
      h(
        "div",
        { class: "row" },
        field(auto ? "Autoscale max throughput (RU/s)" : "Throughput (RU/s)", ru),
        h(
          "button",
          {
            type: "button",
            class: "writes",
            id: "set-ru-save",
            onclick: () =>
              guard(async () => {
                const next = structuredClone(offer);
                if (auto) next.content.offerAutopilotSettings.maxThroughput = Number(ru.value);
                else next.content.offerThroughput = Number(ru.value);
                const r2 = await state.client.request("PUT", path("offers", offer.id), { body: next, headers: offer._etag ? { "If-Match": offer._etag } : {} });
                Object.assign(offer, r2.body);
                clear(msg, h("p", { role: "status" }, `Throughput set to ${ru.value} RU/s: ${fmtNum(r2.charge)} RU`));
              }, msg),
          },
          "Save throughput",
        ),
      ),
    );
  }, offerBox);
}

// ---- partitions ----

const METRICS = [
  ["ru", "RU/s"],
  ["throttles", "429s/s"],
  ["storage", "Storage"],
];

async function partitionsView(panel, db, def) {
  const gen = state.gen;
  let metric = "ru";
  let prev = null;
  let last = null;
  const events = h("ol", { id: "split-events", class: "events", "aria-live": "polite" });
  const hotBox = h("div", { id: "hot-keys", role: "status", "aria-live": "polite" });
  const bar = h("div", { id: "epk-bar", class: "epk-bar", role: "list", "aria-label": "Physical partitions across the EPK space" });
  const tableBox = h("div", { id: "partitions-table", class: "table-wrap wide", tabindex: "0", role: "region", "aria-label": "Physical partitions" });
  const stamp = h("p", { class: "hint", id: "partitions-stamp" });
  const live = h("input", { type: "checkbox", id: "live", checked: true });
  const radios = METRICS.map(([m, label]) => [
    h("input", { type: "radio", name: "pmetric", id: `pm-${m}`, value: m, checked: m === metric, onchange: () => ((metric = m), last && draw(last)) }),
    h("label", { for: `pm-${m}` }, label),
  ]);

  const draw = (a) => {
    const valueOf = (row) => (metric === "ru" ? row.ruRate : metric === "throttles" ? row.throttleRate : row.p.storageBytes);
    const maxVal = Math.max(1e-9, ...a.rows.map((r) => valueOf(r) || 0));
    const label = (row) => {
      const v = valueOf(row);
      if (v === null) return "…";
      return metric === "storage" ? fmtBytes(v) : `${fmtNum(v)}${metric === "ru" ? " RU/s" : " 429/s"}`;
    };
    bar.replaceChildren();
    for (const row of a.rows) {
      const p = row.p;
      const w = Math.max(0, epkFraction(p.maxExclusive) - epkFraction(p.minInclusive));
      const scale = metric === "ru" && p.ruPerSecond > 0 ? (row.ruRate || 0) / p.ruPerSecond : (valueOf(row) || 0) / maxVal;
      const hot = row.hotKeys.size > 0;
      bar.append(
        h(
          "a",
          {
            href: `#part-${p.id}`,
            role: "listitem",
            class: "seg" + (hot ? " hot" : ""),
            style: `flex-grow:${w};background:${colour(scale)}`,
            "data-id": p.id,
            "aria-label": `Partition ${p.id}: EPK ${p.minInclusive || "00"} to ${p.maxExclusive}, ${(w * 100).toFixed(1)}% of the key space, ${label(row)}${hot ? ", hot key" : ""}`,
          },
          h("span", { class: "seg-id" }, p.id),
          h("span", { class: "seg-val" }, label(row)),
        ),
      );
    }
    const keyList = (keys, row, fmt, cls) =>
      keys && keys.length
        ? h("ol", { class: "keys" }, keys.map((k) => h("li", { class: row.hotKeys.has(k.key) && cls ? "hot-key" : null, "data-key": k.key, title: k.weight !== undefined ? `${fmtNum(k.weight)} since the server started` : null }, h("code", {}, k.key), " ", fmt(k))))
        : h("span", { class: "hint" }, "—");
    clear(
      tableBox,
      h(
        "table",
        { class: "partitions", "aria-label": "Physical partitions" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Partition"),
            h("th", { scope: "col", class: "writes" }, "Split"),
            ["EPK range", "Parents", "RU/s (share)", "RU/s now", "429s/s now", "Storage", "Items", "Logical partitions", "Top keys by RU/s", "Top keys by 429s", "Top keys by storage"].map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h(
          "tbody",
          {},
          a.rows.map((row) =>
            h(
              "tr",
              { id: `part-${row.p.id}`, class: row.hotKeys.size ? "hot" : null, "data-id": row.p.id },
              h("th", { scope: "row" }, row.p.id),
              h(
                "td",
                { class: "writes" },
                h(
                  "button",
                  {
                    type: "button",
                    class: "split-button",
                    "data-id": row.p.id,
                    "aria-label": `Split partition ${row.p.id} at its storage midpoint`,
                    onclick: () =>
                      guard(async () => {
                        await state.client.request("POST", path("_partita", "dbs", db, "colls", def.id, "pkranges", row.p.id, "split"));
                        await refresh();
                      }),
                  },
                  "Split",
                ),
              ),
              h("td", {}, h("code", { title: `${row.p.minInclusive || '""'} – ${row.p.maxExclusive}` }, `${shortEPK(row.p.minInclusive)} – ${shortEPK(row.p.maxExclusive)}`)),
              h("td", {}, (row.p.parents || []).join(", ") || "—"),
              h("td", {}, row.p.ruPerSecond ? fmtNum(row.p.ruPerSecond) : "unlimited"),
              h("td", {}, row.ruRate === null ? "…" : fmtNum(row.ruRate)),
              h("td", {}, row.throttleRate === null ? "…" : fmtNum(row.throttleRate)),
              h("td", {}, fmtBytes(row.p.storageBytes || 0)),
              h("td", {}, String(row.p.items || 0)),
              h("td", {}, String(row.p.logicalPartitions || 0)),
              h("td", {}, keyList(row.p.topKeysByRUNow?.length ? row.p.topKeysByRUNow : row.p.topKeysByRU, row, (k) => `${fmtNum(row.keyRates[k.key] ?? 0)}`, true)),
              h("td", {}, keyList(row.p.topKeysByThrottles, row, (k) => `${fmtNum(k.weight)}`, false)),
              h("td", {}, keyList(row.p.topKeysByStorage, row, (k) => `${fmtBytes(k.bytes)}, ${k.items} items`, false)),

            ),
          ),
        ),
      ),
    );
    clear(
      hotBox,
      a.hot.length
        ? a.hot.map((k) =>
            h(
              "p",
              { class: "hot-callout" },
              "Hot key ",
              h("code", { class: "hot-name" }, k.key),
              ` in partition ${k.partition}: ${Math.round(k.share * 100)}% of its request units (${fmtNum(k.ruRate)} RU/s)`,
              k.throttleRate > 0 ? `, partition throttled ${fmtNum(k.throttleRate)} times/s` : "",
            ),
          )
        : h("p", { class: "hint" }, prev ? "No hot key now." : "Measuring…"),
    );
  };

  const refresh = async () => {
    if (gen !== state.gen || !state.client) return;
    const t = Date.now();
    try {
      const r = await state.client.get(path("_partita", "dbs", db, "colls", def.id, "partitions"));
      const a = analyze(r.body, prev, t);
      for (const s of a.splits) {
        events.prepend(h("li", { class: "split-event" }, `${new Date(t).toLocaleTimeString()}: partition ${s.parent} split into ${s.children.join(" and ") || "new ranges"}`));
      }
      prev = snapshot(r.body, t);
      last = a;
      draw(a);
      stamp.textContent = `${a.rows.length} physical partition${a.rows.length === 1 ? "" : "s"}, updated ${new Date(t).toLocaleTimeString()}`;
      banner(null);
    } catch (err) {
      if (!state.client) return; // signed out meanwhile: the sign-in form says why
      banner(describe(err) + (err instanceof NetworkError ? " Retrying…" : ""));
      if (err instanceof CosmosError && err.status === 401) return;
    }
  };

  const schedule = () => {
    clearTimeout(state.timer);
    if (!live.checked) return;
    state.timer = setTimeout(async () => {
      await refresh();
      if (gen === state.gen) schedule();
    }, REFRESH_MS);
  };
  state.stop = () => {
    clearTimeout(state.timer);
    state.timer = null;
    live.checked = false;
  };
  live.addEventListener("change", () => (live.checked ? refresh().then(schedule) : clearTimeout(state.timer)));

  clear(
    panel,
    h(
      "div",
      { class: "row" },
      h("fieldset", { class: "inline" }, h("legend", {}, "Colour by"), radios),
      h("div", { class: "field inline" }, live, h("label", { for: "live" }, `Refresh every ${REFRESH_MS / 1000} s`)),
      h("button", { type: "button", id: "partitions-refresh", onclick: refresh }, "Refresh now"),
    ),
    stamp,
    bar,
    h("div", { class: "legend" }, h("span", { class: "swatch", style: `background:${colour(0)}` }), " idle ", h("span", { class: "swatch", style: `background:${colour(1)}` }), " at its throughput share (RU/s) or the busiest partition"),
    hotBox,
    adviseBox(db, def),
    h("h3", {}, "Splits seen"),
    events,
    tableBox,
  );
  await refresh();
  schedule();
}

// adviseBox is the advisor's button and result: it asks the server to run
// `partita advise --live` on a sample of the container (a signed read).
function adviseBox(db, def) {
  const sample = h("input", { id: "advise-sample", type: "number", min: 1, max: 10000, value: 1000 });
  const out = h("div", { id: "advise-out", "aria-live": "polite" });
  const pct = (x) => (x === null || x === undefined ? "—" : `${Math.round(x * 100)}%`);
  const run = () =>
    guard(async () => {
      clear(out, h("p", { role: "status" }, "Sampling and ranking candidate keys…"));
      const r = await state.client.get(path("_partita", "dbs", db, "colls", def.id, "advise"), { "x-partita-advise-sample": String(sample.value || 1000) });
      const rep = r.body.report;
      clear(
        out,
        h("p", {}, "Recommended partition key: ", h("code", { id: "advise-recommendation" }, rep.recommendation), ` (current: ${(rep.currentKey || []).join(", ") || "none"}; sample of ${rep.items} items)`),
        h("ul", { class: "summary" }, (rep.summary || []).map((line) => h("li", {}, line))),
        (rep.hotKeys || []).length ? h("div", {}, h("h4", {}, "Hot keys"), h("ul", {}, rep.hotKeys.map((k) => h("li", {}, h("code", {}, k.key), ` (partition ${k.partition}, ${pct(k.share)} of its RU): ${k.advice}`)))) : null,
        h(
          "div",
          { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Candidate keys, best first" },
          h(
            "table",
            { id: "advise-table" },
            h("thead", {}, h("tr", {}, ["Rank", "Key", "Strategy", "Score", "Distinct", "Largest share", "Write skew", "Single-partition queries", "Why"].map((c) => h("th", { scope: "col" }, c)))),
            h(
              "tbody",
              {},
              (rep.candidates || []).slice(0, 15).map((c) =>
                h(
                  "tr",
                  { class: c.current ? "current" : null },
                  h("td", {}, String(c.rank)),
                  h("td", {}, h("code", {}, c.key), c.current ? " (current)" : ""),
                  h("td", {}, c.strategy),
                  h("td", {}, fmtNum(c.score)),
                  h("td", {}, String(c.distinct)),
                  h("td", {}, pct(c.largestShare)),
                  h("td", {}, pct(c.writeSkew)),
                  h("td", {}, pct(c.singlePartition)),
                  h("td", {}, (c.why || []).join(" ")),
                ),
              ),
            ),
          ),
        ),
        h("details", {}, h("summary", {}, "As partita advise prints it"), h("pre", { class: "code" }, r.body.text)),
      );
    }, out);
  return h(
    "section",
    { class: "advise", "aria-labelledby": "advise-title" },
    h("h3", { id: "advise-title" }, "Partition key advice"),
    h("div", { class: "row" }, field("Sample size (items)", sample), h("button", { type: "button", id: "advise-run", onclick: run }, "Advise")),
    out,
  );
}

// shortEPK abbreviates an EPK bound for the table (the full one is its title).
function shortEPK(epk) {
  if (!epk) return '""';
  return epk.length > 8 ? epk.slice(0, 8) + "…" : epk;
}

// ---- start ----

function wire() {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    signIn($("key").value);
  });
  $("use-emulator-key").addEventListener("click", () => {
    $("key").value = EMULATOR_KEY;
    $("key").focus();
  });
  $("signout").addEventListener("click", () => signOut("Signed out."));
  $("refresh-tree").addEventListener("click", () => renderTree());
  $("new-db-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const id = $("new-db-id").value.trim();
    const ru = $("new-db-ru").value;
    await guard(async () => {
      await state.client.request("POST", "/dbs", { body: { id }, headers: ru ? { "x-ms-offer-throughput": ru } : {} });
      $("new-db-id").value = "";
      $("new-db").open = false;
      await renderTree();
    });
  });
  // Errors nobody caught still reach the page, never a blank screen.
  window.addEventListener("unhandledrejection", (e) => banner(describe(e.reason)));
  window.addEventListener("error", (e) => banner(`Unexpected error: ${e.message}`));
}

wire();
restore();

// Server-side scripts, batch and bulk conformance test: drives a freshly
// started Partita server with the official Azure Cosmos DB JavaScript SDK
// (@azure/cosmos, pinned in package.json) through stored procedures,
// triggers, UDFs, transactional batch and bulk.
//
// Run: PARTITA_BIN=/path/to/partita node --test
//
// The script bodies below are real JavaScript functions: the SDK stringifies
// them before sending, exactly as an application would.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { TriggerOperation, TriggerType } from "@azure/cosmos";

import { startPartita, statusOfFailure } from "./server.mjs";

const SCRIPT_LOG_HEADER = "x-ms-documentdb-script-log-results";

/** Reads an item, returning its body or undefined on 404. */
async function readOrUndefined(container, id, pk) {
  const { resource, statusCode } = await container.item(id, pk).read();
  if (statusCode === 404) return undefined;
  assert.equal(statusCode, 200, `read ${pk}/${id}: unexpected status`);
  return resource;
}

/** Runs fn, which must throw a Cosmos error; returns that error. */
async function failure(fn) {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  assert.fail("expected the operation to fail, but it succeeded");
}

describe("partita scripts, batch and bulk with @azure/cosmos", () => {
  let env; // from startPartita
  let client;
  let container;

  const dbId = "scriptsDb";
  const containerId = "scripts";

  before(async () => {
    env = await startPartita();
    client = env.client;
    const { database } = await client.databases.create({ id: dbId });
    ({ container } = await database.containers.create({ id: containerId, partitionKey: { paths: ["/pk"] } }));
  });

  after(async () => {
    await env?.stop();
  });

  describe("stored procedures", () => {
    it("create, read, replace, query, readAll and delete", async () => {
      const sprocs = container.scripts.storedProcedures;
      const created = await sprocs.create({
        id: "hello",
        body: function () {
          getContext().getResponse().setBody("v1");
        },
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.resource.id, "hello");
      assert.match(created.resource.body, /setBody\("v1"\)/);
      assert.ok(created.resource._rid, "sproc has no _rid");
      assert.ok(created.resource._etag, "sproc has no _etag");
      assert.ok(created.resource._self, "sproc has no _self");

      assert.equal(
        await statusOfFailure(() => sprocs.create({ id: "hello", body: "function () {}" })),
        409,
      );

      const sproc = container.scripts.storedProcedure("hello");
      const read = await sproc.read();
      assert.equal(read.statusCode, 200);
      assert.equal(read.resource.id, "hello");
      assert.equal(read.resource.body, created.resource.body);
      assert.equal(read.resource._etag, created.resource._etag);

      const v1 = await sproc.execute("any");
      assert.equal(v1.resource, "v1");

      const replaced = await sproc.replace({
        id: "hello",
        body: function () {
          getContext().getResponse().setBody("v2");
        },
      });
      assert.equal(replaced.statusCode, 200);
      assert.match(replaced.resource.body, /setBody\("v2"\)/);
      assert.notEqual(replaced.resource._etag, created.resource._etag, "etag did not change on replace");
      const v2 = await sproc.execute("any");
      assert.equal(v2.resource, "v2", "execute still runs the old body after replace");

      await sprocs.create({ id: "other", body: "function () {}" });
      const { resources: all } = await sprocs.readAll().fetchAll();
      assert.deepEqual(all.map((s) => s.id).sort(), ["hello", "other"]);

      const { resources: queried } = await sprocs
        .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: "other" }] })
        .fetchAll();
      assert.deepEqual(queried.map((s) => s.id), ["other"]);

      const deleted = await container.scripts.storedProcedure("other").delete();
      assert.equal(deleted.statusCode, 204);
      assert.equal(await statusOfFailure(() => container.scripts.storedProcedure("other").read()), 404);
      assert.equal(await statusOfFailure(() => container.scripts.storedProcedure("other").execute("any")), 404);
      const { resources: left } = await sprocs.readAll().fetchAll();
      assert.deepEqual(left.map((s) => s.id), ["hello"]);
    });

    it("execute: creates two documents, returns a value and the console log", async () => {
      await container.scripts.storedProcedures.create({
        id: "createTwo",
        body: function (prefix, n) {
          var coll = getContext().getCollection();
          var made = [];
          [1, 2].forEach(function (i) {
            var doc = { id: prefix + i, pk: "sp", n: n * i };
            var ok = coll.createDocument(coll.getSelfLink(), doc, function (err, created) {
              if (err) throw err;
              made.push(created.id);
              // Callbacks run after the function returns, as in Cosmos DB: log once both ran.
              if (made.length === 2) console.log("created " + made.length + " docs: " + made.join(","));
            });
            if (!ok) throw new Error("not accepted");
          });
          getContext().getResponse().setBody({ made: made, total: n * 3 });
        },
      });
      const res = await container.scripts
        .storedProcedure("createTwo")
        .execute("sp", ["d", 7], { enableScriptLogging: true });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.resource, { made: ["d1", "d2"], total: 21 });

      // The log comes back. Decoded leniently here ('+' as space); the exact
      // encoding is checked in the next test.
      const raw = res.headers[SCRIPT_LOG_HEADER];
      assert.equal(typeof raw, "string", `no ${SCRIPT_LOG_HEADER} header in ${JSON.stringify(res.headers)}`);
      assert.equal(decodeURIComponent(raw.replace(/\+/g, " ")), "created 2 docs: d1,d2");

      const d1 = await readOrUndefined(container, "d1", "sp");
      const d2 = await readOrUndefined(container, "d2", "sp");
      assert.equal(d1?.n, 7);
      assert.equal(d2?.n, 14);
      assert.ok(d1._etag && d1._ts, "a document made by a sproc has no system properties");

      // Without enableScriptLogging no log comes back.
      await container.item("d1", "sp").delete();
      await container.item("d2", "sp").delete();
      const quiet = await container.scripts.storedProcedure("createTwo").execute("sp", ["d", 1]);
      assert.equal(quiet.headers[SCRIPT_LOG_HEADER], undefined);
    });

    it("execute: the script log header is percent-encoded like Cosmos DB's", async () => {
      // Spaces as %20 and no trailing newline: the .NET SDK's emulator test
      // (StoredProcedureTests.ExecutionLogsAsStreamTests) compares
      // Uri.UnescapeDataString(header) with the logged text exactly.
      await container.scripts.storedProcedures.create({
        id: "logOnly",
        body: function () {
          console.log("log me: a,b");
          getContext().getResponse().setBody(1);
        },
      });
      const res = await container.scripts.storedProcedure("logOnly").execute("sp", [], { enableScriptLogging: true });
      const raw = res.headers[SCRIPT_LOG_HEADER];
      assert.equal(raw, encodeURIComponent("log me: a,b"));
      assert.equal(decodeURIComponent(raw), "log me: a,b");
    });

    it("execute: a script that fails still returns what it logged", async () => {
      // Cosmos DB sends the log header with the error (the .NET SDK reads it
      // from CosmosException.Headers); it was dropped (a scripts hunt).
      await container.scripts.storedProcedures.create({
        id: "logThenThrow",
        body: function () {
          console.log("got this far");
          throw new Error("and no further");
        },
      });
      const err = await container.scripts
        .storedProcedure("logThenThrow")
        .execute("sp", [], { enableScriptLogging: true })
        .then(() => undefined, (e) => e);
      assert.ok(err, "the failing sproc succeeded");
      assert.equal(err.code, 400);
      assert.match(err.message, /and no further/);
      assert.equal(decodeURIComponent(err.headers?.[SCRIPT_LOG_HEADER] ?? ""), "got this far");
    });

    it("execute: a long script log does not break the SDK after the writes commit", async () => {
      // Node refuses a response whose headers pass 16 KiB: a log of 17,000
      // characters (or 2,000 of "€", nine bytes each encoded) failed the
      // call after its create had committed (a scripts hunt). The header is
      // cut at a character within 8 KiB encoded.
      await container.scripts.storedProcedures.create({
        id: "logLong",
        body: function (id, text, times) {
          var coll = getContext().getCollection();
          coll.createDocument(coll.getSelfLink(), { id: id, pk: "sp" }, function (err) {
            if (err) throw err;
            console.log(text.repeat(times));
            getContext().getResponse().setBody("done");
          });
        },
      });
      for (const [id, text, times] of [["long-ascii", "x", 17000], ["long-euro", "€", 2000]]) {
        const res = await container.scripts.storedProcedure("logLong").execute("sp", [id, text, times], { enableScriptLogging: true });
        assert.equal(res.resource, "done");
        const log = decodeURIComponent(res.headers[SCRIPT_LOG_HEADER]);
        assert.ok(log.length > 0 && text.repeat(times).startsWith(log), `the log is not a prefix of the one written: ${log.slice(0, 40)}…`);
        assert.ok(res.headers[SCRIPT_LOG_HEADER].length <= 8192, `the log header is ${res.headers[SCRIPT_LOG_HEADER].length} bytes`);
        assert.equal((await readOrUndefined(container, id, "sp"))?.id, id);
      }
    });

    it("execute: console.log substitutes %s as Cosmos DB's script runtime does", async () => {
      // The sproc of the Java, Python and .NET SDKs' script-logging tests, whose
      // header decodes to "The value of x is 1."; then the runtime's other rules
      // (DocDbWrapperScript.js): %% is %, %d and %j are not placeholders,
      // arguments beyond the placeholders are dropped, one argument is appended
      // as "" + value, and calls are concatenated.
      await container.scripts.storedProcedures.create({
        id: "logFormat",
        body: function (which) {
          var mytext = "x";
          var myval = 1;
          if (which === "sdk") {
            console.log("The value of %s is %s.", mytext, myval);
          } else {
            console.log("%s%% %d %j;", 50, 7, { a: 1 }, "dropped");
            console.log({ a: 1 });
            console.log(42);
          }
          getContext().getResponse().setBody("Success!");
        },
      });
      const sdk = await container.scripts.storedProcedure("logFormat").execute("sp", ["sdk"], { enableScriptLogging: true });
      assert.equal(sdk.resource, "Success!");
      assert.equal(decodeURIComponent(sdk.headers[SCRIPT_LOG_HEADER]), "The value of x is 1.");
      const rules = await container.scripts.storedProcedure("logFormat").execute("sp", ["rules"], { enableScriptLogging: true });
      assert.equal(decodeURIComponent(rules.headers[SCRIPT_LOG_HEADER]), "50% %d %j;[object Object]42");

      // With logging on, a first argument that is not a string fails the script (400).
      await container.scripts.storedProcedures.create({
        id: "logBadFirst",
        body: function () {
          console.log({ a: 1 }, "x");
        },
      });
      const err = await failure(() =>
        container.scripts.storedProcedure("logBadFirst").execute("sp", [], { enableScriptLogging: true }),
      );
      assert.equal(err.code, 400);
      assert.match(err.message, /First argument to console\.log should be a string/);
      const quiet = await container.scripts.storedProcedure("logBadFirst").execute("sp", []);
      assert.equal(quiet.statusCode, 200, "with logging off console.log does nothing");
    });

    it("execute: response.appendValue and appendBody append to the body", async () => {
      // The Python SDK's test_stored_procedure_functionality appends 0 to 9 and reads "0123456789".
      await container.scripts.storedProcedures.create({
        id: "appender",
        body: function () {
          for (var i = 0; i < 10; i++) getContext().getResponse().appendValue("Body", i);
        },
      });
      const res = await container.scripts.storedProcedure("appender").execute("sp", []);
      assert.equal(res.resource, "0123456789");

      await container.scripts.storedProcedures.create({
        id: "appendBody",
        body: function () {
          var r = getContext().getResponse();
          r.setBody("count:");
          r.appendBody(3);
          r.appendValue("Body", "!");
        },
      });
      assert.equal((await container.scripts.storedProcedure("appendBody").execute("sp", [])).resource, "count:3!");
    });

    it("execute: a throw after a write fails with 400 and rolls the write back", async () => {
      await container.scripts.storedProcedures.create({
        id: "writeThenThrow",
        body: function (id) {
          var coll = getContext().getCollection();
          coll.createDocument(coll.getSelfLink(), { id: id, pk: "sp" }, function (err) {
            if (err) throw err;
          });
          throw new Error("boom after write");
        },
      });
      const err = await failure(() => container.scripts.storedProcedure("writeThenThrow").execute("sp", ["ghost"]));
      assert.equal(err.code, 400, `expected 400, got ${err.code}: ${err.message}`);
      assert.match(err.message, /boom after write/);
      assert.equal(await readOrUndefined(container, "ghost", "sp"), undefined, "the sproc's write survived its throw");
    });

    it("execute: 50 concurrent runs of a counter end at exactly 50", async () => {
      await container.scripts.storedProcedures.create({
        id: "incr",
        body: function (id) {
          var coll = getContext().getCollection();
          var link = coll.getAltLink() + "/docs/" + id;
          coll.readDocument(link, {}, function (err, doc) {
            if (err && err.number === 404) {
              coll.createDocument(coll.getSelfLink(), { id: id, pk: "ctr", count: 1 }, function (e2, made) {
                if (e2) throw e2;
                getContext().getResponse().setBody(made.count);
              });
              return;
            }
            if (err) throw err;
            doc.count += 1;
            coll.replaceDocument(link, doc, { etag: doc._etag }, function (e3, saved) {
              if (e3) throw e3;
              getContext().getResponse().setBody(saved.count);
            });
          });
        },
      });
      const sproc = container.scripts.storedProcedure("incr");
      const results = await Promise.all(Array.from({ length: 50 }, () => sproc.execute("ctr", ["counter"])));
      for (const r of results) assert.equal(r.statusCode, 200);
      // Each run saw a distinct count: the runs were serialised.
      assert.deepEqual(
        results.map((r) => r.resource).sort((a, b) => a - b),
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      const doc = await readOrUndefined(container, "counter", "ctr");
      assert.equal(doc?.count, 50);
    });
  });

  describe("triggers", () => {
    it("a Pre trigger adds a property on create", async () => {
      const created = await container.scripts.triggers.create({
        id: "stamp",
        triggerType: TriggerType.Pre,
        triggerOperation: TriggerOperation.Create,
        body: function () {
          var req = getContext().getRequest();
          var doc = req.getBody();
          doc.stamped = "by-pre";
          req.setBody(doc);
        },
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.resource.id, "stamp");
      assert.equal(created.resource.triggerType.toLowerCase(), "pre");
      assert.equal(created.resource.triggerOperation.toLowerCase(), "create");

      const { resource: read } = await container.scripts.trigger("stamp").read();
      assert.equal(read.id, "stamp");

      const withTrigger = await container.items.create({ id: "t1", pk: "tr" }, { preTriggerInclude: ["stamp"] });
      assert.equal(withTrigger.statusCode, 201);
      assert.equal(withTrigger.resource.stamped, "by-pre");
      assert.equal((await readOrUndefined(container, "t1", "tr"))?.stamped, "by-pre");

      // Not included: the trigger does not run.
      await container.items.create({ id: "t2", pk: "tr" });
      assert.equal((await readOrUndefined(container, "t2", "tr"))?.stamped, undefined);
    });

    it("a Post trigger that throws aborts the create", async () => {
      await container.scripts.triggers.create({
        id: "rejectFlagged",
        triggerType: TriggerType.Post,
        triggerOperation: TriggerOperation.All,
        body: function () {
          var doc = getContext().getResponse().getBody();
          if (doc.flagged) throw new Error("flagged document rejected");
        },
      });
      const opts = { postTriggerInclude: ["rejectFlagged"] };

      const ok = await container.items.create({ id: "ok1", pk: "tr", flagged: false }, opts);
      assert.equal(ok.statusCode, 201);

      const err = await failure(() => container.items.create({ id: "bad1", pk: "tr", flagged: true }, opts));
      assert.equal(err.code, 400, `expected 400, got ${err.code}: ${err.message}`);
      assert.match(err.message, /flagged document rejected/);
      assert.equal(await readOrUndefined(container, "bad1", "tr"), undefined, "a create aborted by its post trigger was kept");
      assert.equal((await readOrUndefined(container, "ok1", "tr"))?.flagged, false);
    });
  });

  describe("trigger bodies are compiled when they run", () => {
    it("a body that is not a function is stored, and fails only the operation that runs it", async () => {
      // The body of @azure/cosmos's own trigger CRUD test.
      const created = await container.scripts.triggers.create({
        id: "sample trigger",
        body: "serverScript() { var x = 10; }",
        triggerType: TriggerType.Pre,
        triggerOperation: TriggerOperation.All,
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.resource.body, "serverScript() { var x = 10; }");
      const { resource: read } = await container.scripts.trigger("sample trigger").read();
      assert.equal(read.body, "serverScript() { var x = 10; }");
      const { resources: queried } = await container.scripts.triggers
        .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: "sample trigger" }] })
        .fetchAll();
      assert.equal(queried.length, 1);

      // Running it fails the create with the compiler's 400; nothing is written.
      const err = await failure(() =>
        container.items.create({ id: "ct1", pk: "tr" }, { preTriggerInclude: ["sample trigger"] }),
      );
      assert.equal(err.code, 400, `expected 400, got ${err.code}: ${err.message}`);
      assert.match(err.message, /compiling Javascript/);
      assert.equal(await readOrUndefined(container, "ct1", "tr"), undefined);

      // The SDK's test then replaces it with a body that runs.
      const replaced = await container.scripts.trigger("sample trigger").replace({
        id: "sample trigger",
        body: "function () { const x = 20; console.log(x); }",
        triggerType: TriggerType.Pre,
        triggerOperation: TriggerOperation.All,
      });
      assert.equal(replaced.statusCode, 200);
      const ok = await container.items.create({ id: "ct2", pk: "tr" }, { preTriggerInclude: ["sample trigger"] });
      assert.equal(ok.statusCode, 201);
      await container.scripts.trigger("sample trigger").delete();

      // Stored procedures still must compile to be stored.
      assert.equal(
        await statusOfFailure(() => container.scripts.storedProcedures.create({ id: "notJs", body: "function ( {" })),
        400,
      );
    });
  });

  describe("user-defined functions", () => {
    it("udf.tax in a single-partition query", async () => {
      const tax = function (x) {
        return Math.round(x * 108) / 100;
      };
      const created = await container.scripts.userDefinedFunctions.create({ id: "tax", body: tax });
      assert.equal(created.statusCode, 201);
      const { resource: read } = await container.scripts.userDefinedFunction("tax").read();
      assert.equal(read.id, "tax");

      const prices = [10, 25, 99.99];
      for (const [i, price] of prices.entries()) {
        await container.items.create({ id: `u${i}`, pk: "udf", price });
      }
      await container.items.create({ id: "elsewhere", pk: "udf-other", price: 1000 });

      const { resources } = await container.items
        .query("SELECT VALUE udf.tax(c.price) FROM c", { partitionKey: "udf" })
        .fetchAll();
      assert.deepEqual(
        resources.sort((a, b) => a - b),
        prices.map(tax).sort((a, b) => a - b),
      );
      assert.deepEqual(prices.map(tax), [10.8, 27, 107.99]);
    });
  });

  describe("transactional batch", () => {
    it("Create, Upsert, Read, Replace, Delete and Patch in one partition", async () => {
      await container.items.create({ id: "b-read", pk: "bt", v: 1 });
      await container.items.create({ id: "b-del", pk: "bt" });
      await container.items.create({ id: "b-patch", pk: "bt", n: 1 });
      const { resource: toReplace } = await container.items.create({ id: "b-repl", pk: "bt", v: "old" });

      const res = await container.items.batch(
        [
          { operationType: "Create", resourceBody: { id: "b-new", pk: "bt", v: "new" } },
          { operationType: "Upsert", resourceBody: { id: "b-read", pk: "bt", v: 2 } },
          { operationType: "Read", id: "b-read" },
          {
            operationType: "Replace",
            id: "b-repl",
            resourceBody: { id: "b-repl", pk: "bt", v: "replaced" },
            ifMatch: toReplace._etag,
          },
          { operationType: "Delete", id: "b-del" },
          {
            operationType: "Patch",
            id: "b-patch",
            resourceBody: { operations: [{ op: "incr", path: "/n", value: 5 }, { op: "add", path: "/tag", value: "p" }] },
          },
        ],
        "bt",
      );
      assert.equal(res.code, 200, `batch status ${res.code}: ${JSON.stringify(res.result)}`);
      assert.deepEqual(
        res.result.map((r) => r.statusCode),
        [201, 200, 200, 200, 204, 200],
      );
      // The Read sees the Upsert before it.
      assert.equal(res.result[2].resourceBody.v, 2);
      for (const i of [0, 1, 2, 3, 5]) {
        assert.ok(res.result[i].eTag, `op ${i} has no eTag`);
        assert.ok(res.result[i].requestCharge > 0, `op ${i} has no requestCharge`);
      }
      assert.equal(res.result[4].resourceBody, undefined, "a delete result carries a body");

      assert.equal((await readOrUndefined(container, "b-new", "bt"))?.v, "new");
      assert.equal((await readOrUndefined(container, "b-read", "bt"))?.v, 2);
      assert.equal((await readOrUndefined(container, "b-repl", "bt"))?.v, "replaced");
      assert.equal(await readOrUndefined(container, "b-del", "bt"), undefined);
      const patched = await readOrUndefined(container, "b-patch", "bt");
      assert.equal(patched?.n, 6);
      assert.equal(patched?.tag, "p");
    });

    it("a duplicate create fails the whole batch: 207, 424 + 409, nothing written", async () => {
      await container.items.create({ id: "b-dup", pk: "bt2", v: "original" });
      const res = await container.items.batch(
        [
          { operationType: "Create", resourceBody: { id: "b-fresh", pk: "bt2" } },
          { operationType: "Upsert", resourceBody: { id: "b-dup", pk: "bt2", v: "changed" } },
          { operationType: "Create", resourceBody: { id: "b-dup", pk: "bt2", v: "again" } },
        ],
        "bt2",
      );
      assert.equal(res.code, 207, `batch status ${res.code}`);
      assert.deepEqual(
        res.result.map((r) => r.statusCode),
        [424, 424, 409],
      );
      assert.equal(await readOrUndefined(container, "b-fresh", "bt2"), undefined, "a failed batch kept its create");
      assert.equal((await readOrUndefined(container, "b-dup", "bt2"))?.v, "original", "a failed batch kept its upsert");
    });
  });

  describe("bulk", () => {
    it("executeBulkOperations: creates over several partition keys all succeed", async () => {
      const pks = ["bulk-a", "bulk-b", "bulk-c", "bulk-d", "bulk-e"];
      const ops = [];
      for (const pk of pks) {
        for (let i = 0; i < 6; i++) {
          // executeBulkOperations needs partitionKey on every operation (checked client-side).
          ops.push({ operationType: "Create", partitionKey: pk, resourceBody: { id: `${pk}-${i}`, pk, i } });
        }
      }
      const results = await container.items.executeBulkOperations(ops);
      assert.equal(results.length, ops.length);
      for (const [i, r] of results.entries()) {
        assert.equal(r.error, undefined, `op ${i} failed: ${JSON.stringify(r.error)}`);
        assert.equal(r.response?.statusCode, 201, `op ${i}: ${JSON.stringify(r)}`);
        assert.equal(r.response.resourceBody.id, ops[i].resourceBody.id);
      }
      for (const pk of pks) {
        const { resources } = await container.items
          .query("SELECT VALUE c.i FROM c", { partitionKey: pk })
          .fetchAll();
        assert.deepEqual(resources.sort(), [0, 1, 2, 3, 4, 5], `partition ${pk}`);
      }
    });

    it("executeBulkOperations: one duplicate fails alone", async () => {
      const results = await container.items.executeBulkOperations([
        { operationType: "Create", partitionKey: "bulk-a", resourceBody: { id: "bulk-a-0", pk: "bulk-a" } },
        { operationType: "Upsert", partitionKey: "bulk-a", resourceBody: { id: "bulk-a-0", pk: "bulk-a", i: 100 } },
        { operationType: "Read", id: "bulk-b-1", partitionKey: "bulk-b" },
        { operationType: "Delete", id: "bulk-c-2", partitionKey: "bulk-c" },
      ]);
      const codes = results.map((r) => r.response?.statusCode ?? r.error?.code);
      assert.deepEqual(codes, [409, 200, 200, 204]);
      assert.equal(results[2].response.resourceBody.i, 1);
      assert.equal((await readOrUndefined(container, "bulk-a-0", "bulk-a"))?.i, 100);
      assert.equal(await readOrUndefined(container, "bulk-c-2", "bulk-c"), undefined);
    });
  });
});

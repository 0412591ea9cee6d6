// Partition keys and container definitions as Cosmos DB treats them, through
// @azure/cosmos: containers created non-partitioned by an old API version
// (the system key /_partitionKey and its "none" partition), hierarchical keys
// whose lower levels are missing or {}, partition key path validation,
// normalised and legacy indexing policies, and the item ttl rule.
//
// Run: PARTITA_BIN=/path/to/partita node --test keys.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import path from "node:path";

import { PartitionKeyBuilder, PartitionKeyKind } from "@azure/cosmos";

import { EMULATOR_KEY, startPartita } from "./server.mjs";

/**
 * Sends one request signed with the master key, as a client of another era
 * would (@azure/cosmos always sends a partition key definition and its own
 * API version). resourceType and resourceLink are those of the signature
 * (e.g. "colls", "dbs/keys"). Resolves with {status, body}.
 */
function rawRequest(env, { method, urlPath, resourceType, resourceLink, headers = {}, body }) {
  const date = new Date().toUTCString();
  const payload = `${method.toLowerCase()}\n${resourceType}\n${resourceLink}\n${date.toLowerCase()}\n\n`;
  const sig = crypto.createHmac("sha256", Buffer.from(EMULATOR_KEY, "base64")).update(payload).digest("base64");
  const ca = fs.readFileSync(path.join(env.dataDir, "tls", "cert.pem"));
  const url = new URL(urlPath, env.endpoint);
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        ca,
        headers: {
          authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`),
          "x-ms-date": date,
          "content-type": "application/json",
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Runs fn, which must fail with a Cosmos error; returns it. */
async function failure(fn) {
  try {
    await fn();
  } catch (err) {
    assert.equal(typeof err.code, "number", `expected a Cosmos error, got ${err}`);
    return err;
  }
  assert.fail("expected the operation to fail, but it succeeded");
}

/** Returns the sorted ids of a query's results. */
async function ids(container, query, options) {
  const { resources } = await container.items.query(query, options).fetchAll();
  return resources.map((r) => r.id).sort();
}

describe("partition keys and definitions with @azure/cosmos", () => {
  let env; // from startPartita
  let client;

  before(async () => {
    env = await startPartita();
    ({ client } = env);
    await client.databases.create({ id: "keys" });
  });

  after(async () => {
    await env?.stop();
  });

  it("non-partitioned container: created by an old API version with the system key, used through the none partition", async () => {
    // A client of an API version from before partition keys were required
    // creates a container without one, and an item without a partition key
    // header. (@azure/cosmos cannot: it sends /_partitionKey as the key of
    // a definition without one, and its own API version.)
    const legacy = { "x-ms-version": "2018-06-18" };
    const created = await rawRequest(env, {
      method: "POST", urlPath: "/dbs/keys/colls", resourceType: "colls", resourceLink: "dbs/keys",
      headers: legacy, body: { id: "fixed" },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.partitionKey, { paths: ["/_partitionKey"], kind: "Hash", version: 1, systemKey: true });
    const old = await rawRequest(env, {
      method: "POST", urlPath: "/dbs/keys/colls/fixed/docs", resourceType: "docs", resourceLink: "dbs/keys/colls/fixed",
      headers: legacy, body: { id: "old", v: 0 },
    });
    assert.equal(old.status, 201, JSON.stringify(old.body));
    const current = await rawRequest(env, {
      method: "POST", urlPath: "/dbs/keys/colls", resourceType: "colls", resourceLink: "dbs/keys",
      headers: { "x-ms-version": "2020-07-15" }, body: { id: "nokey" },
    });
    assert.equal(current.status, 400);
    assert.equal(current.body.message, "A Partition key definition is not specified in the request.");

    const container = client.database("keys").container("fixed");
    const { resource: def } = await container.read();
    assert.equal(def.partitionKey.systemKey, true);

    // Items without _partitionKey: the SDK sends [] (the none value of a
    // system key) for writes, and for reads without a partition key.
    const a = await container.items.create({ id: "a", v: 1 });
    assert.equal(a.statusCode, 201);
    const b = await container.items.upsert({ id: "b", v: 2 });
    assert.equal(b.statusCode, 201);
    const keyed = await container.items.create({ id: "k", _partitionKey: "p1" });
    assert.equal(keyed.statusCode, 201);

    const readA = await container.item("a").read();
    assert.equal(readA.statusCode, 200);
    assert.equal(readA.resource.v, 1);
    const readNone = await container.item("b", new PartitionKeyBuilder().addNoneValue().build()).read();
    assert.equal(readNone.statusCode, 200, "PartitionKeyBuilder().addNoneValue() reads the none partition");
    assert.equal((await container.item("k", "p1").read()).statusCode, 200);
    assert.equal((await container.item("k").read()).statusCode, 404, "a keyed item is not in the none partition");

    const replaced = await container.item("a").replace({ id: "a", v: 10 });
    assert.equal(replaced.resource.v, 10);

    assert.equal((await container.item("old").read()).resource.v, 0, "the legacy client's item is in the none partition");

    assert.deepEqual(await ids(container, "SELECT * FROM c"), ["a", "b", "k", "old"]);
    assert.deepEqual(await ids(container, "SELECT * FROM c", { partitionKey: "p1" }), ["k"]);
    const { resources: all } = await container.items.readAll().fetchAll();
    assert.deepEqual(all.map((r) => r.id).sort(), ["a", "b", "k", "old"]);

    const deleted = await container.item("b").delete();
    assert.equal(deleted.statusCode, 204);
    assert.equal((await container.item("b").read()).statusCode, 404);
  });

  it("hierarchical keys: missing and {} lower levels are the Undefined component", async () => {
    const { container } = await client.database("keys").containers.create({
      id: "hier",
      partitionKey: { paths: ["/tenant", "/user"], kind: PartitionKeyKind.MultiHash, version: 2 },
      throughput: 24000,
    });
    await container.items.create({ id: "missing", tenant: "acme" });
    await container.items.create({ id: "empty", tenant: "acme", user: {} });
    await container.items.create({ id: "full", tenant: "acme", user: "u1" });
    await container.items.create({ id: "other", tenant: "zeta" });

    for (const id of ["missing", "empty"]) {
      const viaUndefined = await container.item(id, ["acme", undefined]).read();
      assert.equal(viaUndefined.statusCode, 200, `read ${id} with ["acme", undefined]`);
      const viaBuilder = await container.item(id, new PartitionKeyBuilder().addValue("acme").addNoneValue().build()).read();
      assert.equal(viaBuilder.statusCode, 200, `read ${id} with addNoneValue()`);
    }
    assert.deepEqual((await container.item("empty", ["acme", undefined]).read()).resource.user, {});

    // A leading prefix finds them; so does a filter on the first level.
    assert.deepEqual(await ids(container, "SELECT * FROM c", { partitionKey: ["acme"] }), ["empty", "full", "missing"]);
    assert.deepEqual(await ids(container, "SELECT * FROM c WHERE c.tenant = 'acme'"), ["empty", "full", "missing"]);
    assert.deepEqual(await ids(container, "SELECT * FROM c", { partitionKey: ["acme", undefined] }), ["empty", "missing"]);

    const replaced = await container.item("missing", ["acme", undefined]).replace({ id: "missing", tenant: "acme", n: 2 });
    assert.equal(replaced.statusCode, 200);
    assert.equal((await container.item("missing", ["acme", undefined]).delete()).statusCode, 204);
  });

  it("partition key paths are validated with Cosmos DB's message", async () => {
    const db = client.database("keys");
    for (const [path, pos] of [
      ["/id ds", 4],
      ["id", 0],
      ["/pk/", 4],
      ["/*", 1],
      ["/a/*", 3],
      ["", 0],
    ]) {
      const err = await failure(() => db.containers.create({ id: "bad", partitionKey: { paths: [path] } }));
      assert.equal(err.code, 400, `path ${JSON.stringify(path)}`);
      assert.ok(
        err.message.includes(
          `The partition key component definition path '${path}' could not be accepted, failed near position '${pos}'. ` +
            "Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.",
        ),
        `path ${JSON.stringify(path)}: ${err.message}`,
      );
    }
    assert.equal((await db.container("bad").read().catch((e) => e)).code, 404, "a refused container exists");
  });

  it("indexing policies: {} and partial policies are completed, _etag is excluded, the legacy form is accepted", async () => {
    const db = client.database("keys");
    const policyOf = async (id, indexingPolicy) => {
      const { resource } = await db.containers.create({ id, partitionKey: { paths: ["/pk"] }, indexingPolicy });
      const { resource: read } = await db.container(id).read();
      assert.deepEqual(read.indexingPolicy, resource.indexingPolicy, "create and read return one policy");
      return read.indexingPolicy;
    };
    const defaults = {
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: '/"_etag"/?' }],
    };
    assert.deepEqual(await policyOf("p-empty", {}), defaults);
    assert.deepEqual(await policyOf("p-included", { includedPaths: [{ path: "/*" }] }), defaults);

    const custom = await policyOf("p-custom", {
      automatic: true,
      indexingMode: "consistent",
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: '/"systemMetadata"/*' }],
    });
    assert.deepEqual(custom.excludedPaths, [{ path: '/"systemMetadata"/*' }, { path: '/"_etag"/?' }]);

    const legacyIndexes = [
      { kind: "Range", dataType: "String" },
      { kind: "Range", dataType: "Number", precision: -1 },
      { kind: "Hash", dataType: "String", precision: 3 },
    ];
    const legacy = await policyOf("p-legacy", { includedPaths: [{ path: "/", indexes: legacyIndexes }] });
    assert.deepEqual(legacy.includedPaths, [{ path: "/", indexes: legacyIndexes }]);
    assert.deepEqual(legacy.excludedPaths, [{ path: '/"_etag"/?' }]);
    const items = db.container("p-legacy").items;
    await items.create({ id: "1", pk: "a", n: 5 });
    assert.deepEqual(await ids(db.container("p-legacy"), "SELECT * FROM c WHERE c.n > 3"), ["1"]);

    const none = await policyOf("p-none", { indexingMode: "none", automatic: false });
    assert.deepEqual(none, { indexingMode: "none", automatic: false, includedPaths: [], excludedPaths: [] });
  });

  it("item ttl: invalid values get 400 while the container has a time to live, and are not checked without one", async () => {
    const db = client.database("keys");
    const { container: on } = await db.containers.create({ id: "ttl-on", partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
    const { container: off } = await db.containers.create({ id: "ttl-off", partitionKey: { paths: ["/pk"] } });
    for (const [ttl, shown] of [
      [null, "null"],
      [0, "0"],
      [-5, "-5"],
      [1.5, "1.5"],
      ["10", '"10"'],
    ]) {
      const err = await failure(() => on.items.create({ id: "x", pk: "a", ttl }));
      assert.equal(err.code, 400, `ttl ${shown}`);
      const want = `The input ttl '${shown}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.`;
      assert.ok(err.message.includes(want), `ttl ${shown}: ${err.message}`);
      const stored = await off.items.upsert({ id: "x", pk: "a", ttl });
      assert.ok([200, 201].includes(stored.statusCode), `ttl ${shown} without a time to live`);
    }
    for (const ttl of [-1, 1, 2147483647]) {
      const ok = await on.items.upsert({ id: "y", pk: "a", ttl });
      assert.ok([200, 201].includes(ok.statusCode), `ttl ${ttl}`);
    }
  });
});

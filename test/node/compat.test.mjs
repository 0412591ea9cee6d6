// Compatibility details current SDKs rely on (issue #16), through
// @azure/cosmos: quota and index-transformation headers of a container read,
// index metrics in the -V2 encoding, the partition key range id of a change
// feed response, ids containing '?' (under --emulator-compat, which accepts
// them as the emulator does), and the emulator's account id.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";

import { EMULATOR_KEY, makeClient, startPartita, statusOfFailure } from "./server.mjs";

/** Parses a "name=value;name=value;" header into an object of numbers. */
function parseQuota(v) {
  assert.equal(typeof v, "string", `quota header ${v}`);
  const out = {};
  for (const part of v.split(";")) {
    if (!part) continue;
    const [k, n] = part.split("=");
    out[k] = Number(n);
  }
  return out;
}

describe("compatibility details with @azure/cosmos", () => {
  let env;
  let database;

  before(async () => {
    env = await startPartita();
    ({ database } = await env.client.databases.createIfNotExists({ id: "compatDb" }));
  });

  after(async () => {
    await env?.stop();
  });

  it("reports quota, usage and index transformation progress on a container read", async () => {
    const { container } = await database.containers.createIfNotExists(
      { id: "quota", partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 12000 }, // two physical partitions: usage sums them
    );
    let bytes = 0;
    for (let i = 0; i < 25; i++) {
      const { resource } = await container.items.create({ id: `q${i}`, pk: `k${i % 6}`, pad: "x".repeat(100 * i) });
      bytes += Buffer.byteLength(JSON.stringify(resource));
    }
    await container.scripts.storedProcedures.create({ id: "sp", body: "function sp() {}" });

    const plain = await container.read();
    assert.equal(plain.headers["x-ms-resource-usage"], undefined, "usage without populateQuotaInfo");

    const read = await container.read({ populateQuotaInfo: true });
    assert.equal(read.statusCode, 200);
    const usage = parseQuota(read.headers["x-ms-resource-usage"]);
    const quota = parseQuota(read.headers["x-ms-resource-quota"]);
    assert.equal(usage.documentsCount, 25);
    assert.equal(usage.storedProcedures, 1);
    assert.equal(usage.triggers, 0);
    assert.equal(usage.functions, 0);
    // Stored bytes (in KB, rounded up) are about the items' JSON.
    assert.ok(Math.abs(usage.documentsSize - bytes / 1024) <= 2, `documentsSize ${usage.documentsSize} KB for ${bytes} bytes`);
    assert.equal(usage.collectionSize, usage.documentsSize);
    assert.equal(usage.documentSize, Math.ceil(usage.documentsSize / 1024));
    for (const k of ["documentsCount", "documentsSize", "collectionSize", "storedProcedures"]) {
      assert.equal(quota[k], -1, `quota ${k}: Partita sets none`);
    }
    assert.equal(read.headers["x-ms-documentdb-collection-index-transformation-progress"], "100");
  });

  it("answers index metrics in the -V2 encoding the SDK decodes", async () => {
    const { container } = await database.containers.createIfNotExists({ id: "metrics", partitionKey: { paths: ["/pk"] } });
    for (let i = 0; i < 5; i++) await container.items.create({ id: `m${i}`, pk: "p", n: i });
    const res = await container.items
      .query("SELECT * FROM c WHERE c.n = 3", { partitionKey: "p", populateIndexMetrics: true })
      .fetchAll();
    assert.equal(res.resources.length, 1);
    const metrics = JSON.parse(res.indexMetrics); // "{}" when the header is missing or undecodable
    assert.ok(Array.isArray(metrics.UtilizedSingleIndexes), `index metrics ${res.indexMetrics}`);
    assert.equal(metrics.UtilizedSingleIndexes[0]?.IndexSpec, "/n/?");
    assert.deepEqual(metrics.PotentialCompositeIndexes, []);

    const none = await container.items.query("SELECT * FROM c", { partitionKey: "p" }).fetchAll();
    assert.equal(none.headers["x-ms-cosmos-index-utilization"], undefined, "index metrics sent unasked");
  });

  it("names the partition key range on change feed responses", async () => {
    const { container } = await database.containers.createIfNotExists(
      { id: "cfRange", partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 18000 },
    );
    for (let i = 0; i < 20; i++) await container.items.create({ id: `c${i}`, pk: `k${i}` });
    const { resources: pkRanges } = await container.readPartitionKeyRanges().fetchAll();
    assert.ok(pkRanges.length > 1, `${pkRanges.length} ranges`);
    const seen = new Set();
    for (const fr of await container.getFeedRanges()) {
      const it = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(fr) });
      const res = await it.readNext();
      assert.equal(res.statusCode, 200);
      const id = res.headers["x-ms-documentdb-partitionkeyrangeid"];
      const rng = pkRanges.find((r) => r.id === id);
      assert.ok(rng, `range id header ${id} names no range of ${JSON.stringify(pkRanges.map((r) => r.id))}`);
      // The range of the response holds every item it returned.
      assert.equal(rng.minInclusive, fr.minInclusive);
      seen.add(id);
    }
    assert.equal(seen.size, pkRanges.length);

    // A logical partition's feed names the range holding it.
    const one = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("k3") });
    const res = await one.readNext();
    assert.equal(res.result.length, 1);
    assert.ok(pkRanges.some((r) => r.id === res.headers["x-ms-documentdb-partitionkeyrangeid"]));
  });

  it("answers a plain http:// endpoint with an error naming the https one", async () => {
    const plain = new CosmosClient({ endpoint: env.endpoint.replace("https:", "http:"), key: EMULATOR_KEY });
    try {
      await assert.rejects(plain.databases.create({ id: "plain" }), (err) => {
        assert.equal(err.code, 400);
        assert.match(err.message, /serves HTTPS only/);
        assert.ok(err.message.includes(env.endpoint), err.message);
        return true;
      });
    } finally {
      plain.dispose();
    }
  });

  it("names the container on batch and bulk responses, so the SDK keeps their session tokens", async () => {
    // @azure/cosmos files a session token under the container that
    // x-ms-content-path (or x-ms-alt-content-path) names and drops it
    // without them; these responses had neither (a conditional-request
    // hunt), so a Session client reading through another cluster node sent
    // no token for its batch's or bulk's writes. (Stored procedure
    // responses name it too, but 4.9.3 keeps no token from an execute.)
    const { container } = await database.containers.createIfNotExists({ id: "sessions", partitionKey: { paths: ["/pk"] } });
    await container.items.create({ id: "seed", pk: "a" });
    const writes = {
      batch: (c) => c.items.batch([{ operationType: "Upsert", resourceBody: { id: "b", pk: "a" } }], "a"),
      bulk: (c) => c.items.bulk([{ operationType: "Upsert", resourceBody: { id: "k", pk: "a" } }]),
    };
    for (const [what, write] of Object.entries(writes)) {
      const client = makeClient(env, { consistencyLevel: "Session" });
      try {
        const c = client.database("compatDb").container("sessions");
        await c.read();
        await write(c);
        const kept = client.clientContext.sessionContainer.get({ resourceAddress: "dbs/compatDb/colls/sessions" });
        assert.ok(kept, `${what}: the SDK kept no session token (${JSON.stringify(kept)})`);
      } finally {
        client.dispose();
      }
    }
  });

  it("refuses ids containing '?' as Cosmos DB does, without --emulator-compat", async () => {
    const { container } = await database.containers.createIfNotExists({ id: "qmark", partitionKey: { paths: ["/pk"] } });
    assert.equal(await statusOfFailure(() => container.items.create({ id: "a?b", pk: "p" })), 400);
    const read = await container.item("a?b", "p").read();
    assert.equal(read.statusCode, 404);
  });
});

describe("--emulator-compat with @azure/cosmos", () => {
  let env;
  let container;

  before(async () => {
    env = await startPartita({ serverArgs: ["--rate-limit=off", "--emulator-compat"] });
    const { database } = await env.client.databases.createIfNotExists({ id: "emuDb" });
    ({ container } = await database.containers.createIfNotExists({ id: "ids", partitionKey: { paths: ["/pk"] } }));
  });

  after(async () => {
    await env?.stop();
  });

  it("creates, reads, replaces, queries and deletes items whose ids contain '?'", async () => {
    // The SDK puts the id into the URL unencoded: the server reads what
    // follows '?' as part of the path, which the SDK signed.
    for (const id of ["a?b", "why?", "?lead", "a?b=c&d=e", "x?y z", "q?é"]) {
      const created = await container.items.create({ id, pk: "p", v: 1 });
      assert.equal(created.statusCode, 201, id);
      const read = await container.item(id, "p").read();
      assert.equal(read.statusCode, 200, id);
      assert.equal(read.resource.id, id);
      const replaced = await container.item(id, "p").replace({ id, pk: "p", v: 2 });
      assert.equal(replaced.statusCode, 200, id);
      assert.equal(replaced.resource.v, 2);
      const { resources } = await container.items
        .query({ query: "SELECT VALUE c.v FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }, { partitionKey: "p" })
        .fetchAll();
      assert.deepEqual(resources, [2], id);
      const deleted = await container.item(id, "p").delete();
      assert.equal(deleted.statusCode, 204, id);
      assert.equal((await container.item(id, "p").read()).statusCode, 404, id);
    }
  });

  it("works with the emulator's account id, localhost", async () => {
    // With id "localhost" the SDK ignores the advertised locations and
    // keeps using its configured endpoint, as against the emulator.
    const { resource: account } = await env.client.getDatabaseAccount();
    assert.ok(account.consistencyPolicy);
    const { resources } = await container.items.readAll().fetchAll();
    assert.ok(Array.isArray(resources));
  });
});

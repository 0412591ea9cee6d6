// CRUD conformance test: drives a freshly started Partita server with the
// official Azure Cosmos DB JavaScript SDK (@azure/cosmos, pinned in
// package.json) to prove a second SDK works against it unchanged.
//
// Run: PARTITA_BIN=/path/to/partita node --test
//
// The server is started on a free loopback port with a temporary data
// directory, the client trusts the self-signed certificate the server
// generated (verification stays on), and the server is stopped and its data
// removed when the suite ends, whatever the outcome.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { startPartita, statusOfFailure } from "./server.mjs";

describe("partita with @azure/cosmos", () => {
  let env; // from startPartita
  let client;
  let endpoint;

  before(async () => {
    env = await startPartita();
    ({ client, endpoint } = env);
  });

  after(async () => {
    await env?.stop();
  });

  const dbId = "nodeDb";
  const containerId = "items";
  const hierId = "hier";

  it("reads the database account", async () => {
    const { resource: account } = await client.getDatabaseAccount();
    assert.ok(account.writableLocations.length > 0, "no writable locations advertised");
    assert.equal(account.writableLocations[0].databaseAccountEndpoint, endpoint);
  });

  it("creates, re-creates (409), createIfNotExists, reads and lists databases", async () => {
    const created = await client.databases.create({ id: dbId });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, dbId);
    assert.ok(created.resource._rid, "database has no _rid");
    assert.ok(created.resource._etag, "database has no _etag");

    assert.equal(await statusOfFailure(() => client.databases.create({ id: dbId })), 409);

    const existing = await client.databases.createIfNotExists({ id: dbId });
    assert.equal(existing.statusCode, 200);
    assert.equal(existing.resource._rid, created.resource._rid);

    const other = await client.databases.createIfNotExists({ id: "nodeDbOther" });
    assert.equal(other.statusCode, 201);

    const read = await client.database(dbId).read();
    assert.equal(read.statusCode, 200);
    assert.equal(read.resource.id, dbId);
    assert.equal(read.resource._rid, created.resource._rid);

    const { resources: dbs } = await client.databases.readAll().fetchAll();
    const ids = dbs.map((d) => d.id).sort();
    assert.deepEqual(ids, [dbId, "nodeDbOther"]);

    const deleted = await client.database("nodeDbOther").delete();
    assert.equal(deleted.statusCode, 204);
    const missing = await statusOfFailure(() => client.database("nodeDbOther").read());
    assert.equal(missing, 404);
  });

  it("creates and reads a container with a hash partition key", async () => {
    const db = client.database(dbId);
    const created = await db.containers.create({ id: containerId, partitionKey: { paths: ["/pk"] } });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, containerId);

    const { resource: def, statusCode } = await db.container(containerId).read();
    assert.equal(statusCode, 200);
    assert.deepEqual(def.partitionKey.paths, ["/pk"]);
    assert.equal(def.partitionKey.kind, "Hash");
    assert.equal(def.partitionKey.version, 2);
    assert.ok(def._self, "container has no _self");
  });

  it("item create, read, duplicate create (409), missing read (404)", async () => {
    const items = client.database(dbId).container(containerId).items;
    const created = await items.create({ id: "a", pk: "p1", n: 1 });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, "a");
    assert.equal(created.resource.n, 1);
    assert.ok(created.resource._etag, "item has no _etag");
    assert.equal(created.etag, created.resource._etag);

    const read = await client.database(dbId).container(containerId).item("a", "p1").read();
    assert.equal(read.statusCode, 200);
    assert.equal(read.resource.id, "a");
    assert.equal(read.resource.pk, "p1");
    assert.equal(read.resource.n, 1);
    assert.equal(read.resource._etag, created.resource._etag);

    assert.equal(await statusOfFailure(() => items.create({ id: "a", pk: "p1", n: 2 })), 409);

    // Same id in a different logical partition is a different item.
    const sameIdOtherPk = await items.create({ id: "a", pk: "p2", n: 3 });
    assert.equal(sameIdOtherPk.statusCode, 201);

    const missing = await client.database(dbId).container(containerId).item("nope", "p1").read();
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.resource, undefined);

    const wrongPk = await client.database(dbId).container(containerId).item("a", "p9").read();
    assert.equal(wrongPk.statusCode, 404);
    assert.equal(wrongPk.substatus, undefined, "a missing item is a 404 with no substatus");

    // A missing container (or database) is Cosmos DB's 404/1003, "owner
    // resource does not exist": a client tells it from a missing item.
    const noContainer = await client.database(dbId).container("noSuchContainer").item("a", "p1").read();
    assert.equal(noContainer.statusCode, 404);
    assert.equal(noContainer.substatus, 1003);
    const noDatabase = await client.database("noSuchDb").container(containerId).item("a", "p1").read();
    assert.equal(noDatabase.statusCode, 404);
    assert.equal(noDatabase.substatus, 1003);
    assert.equal(
      await statusOfFailure(() => client.database(dbId).container("noSuchContainer").items.upsert({ id: "a", pk: "p1" })),
      404,
    );
  });

  it("item replace with If-Match: current etag succeeds, stale etag gives 412", async () => {
    const item = client.database(dbId).container(containerId).item("a", "p1");
    const { resource: before, etag: oldEtag } = await item.read();

    const replaced = await item.replace(
      { id: "a", pk: "p1", n: 10 },
      { accessCondition: { type: "IfMatch", condition: oldEtag } },
    );
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.resource.n, 10);
    assert.notEqual(replaced.resource._etag, before._etag, "etag did not change on replace");

    const stale = await statusOfFailure(() =>
      item.replace({ id: "a", pk: "p1", n: 11 }, { accessCondition: { type: "IfMatch", condition: oldEtag } }),
    );
    assert.equal(stale, 412);

    const { resource: after } = await item.read();
    assert.equal(after.n, 10, "a replace with a stale etag changed the item");
  });

  it("item upsert creates then updates", async () => {
    const items = client.database(dbId).container(containerId).items;
    const first = await items.upsert({ id: "u", pk: "p1", v: "one" });
    assert.equal(first.statusCode, 201);
    assert.equal(first.resource.v, "one");

    const second = await items.upsert({ id: "u", pk: "p1", v: "two" });
    assert.equal(second.statusCode, 200);
    assert.equal(second.resource.v, "two");

    const { resource } = await client.database(dbId).container(containerId).item("u", "p1").read();
    assert.equal(resource.v, "two");
  });

  it("item readAll lists every item", async () => {
    const { resources } = await client.database(dbId).container(containerId).items.readAll().fetchAll();
    const keys = resources.map((r) => `${r.pk}/${r.id}`).sort();
    assert.deepEqual(keys, ["p1/a", "p1/u", "p2/a"]);
  });

  it("single-partition parameterised query", async () => {
    const container = client.database(dbId).container(containerId);
    const { resources } = await container.items
      .query(
        { query: "SELECT * FROM c WHERE c.pk = @pk", parameters: [{ name: "@pk", value: "p1" }] },
        { partitionKey: "p1" },
      )
      .fetchAll();
    assert.deepEqual(resources.map((r) => r.id).sort(), ["a", "u"]);
    for (const r of resources) assert.equal(r.pk, "p1");

    const { resources: none } = await container.items
      .query(
        { query: "SELECT * FROM c WHERE c.pk = @pk", parameters: [{ name: "@pk", value: "zzz" }] },
        { partitionKey: "zzz" },
      )
      .fetchAll();
    assert.deepEqual(none, []);
  });

  it("conflicts feed: empty on a single-region account, a conflict by id is 404", async () => {
    const container = client.database(dbId).container(containerId);
    const { resources: all } = await container.conflicts.readAll().fetchAll();
    assert.deepEqual(all, []);
    const { resources: queried } = await container.conflicts
      .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: "c1" }] })
      .fetchAll();
    assert.deepEqual(queried, []);
    // Reading one by id is checked with raw requests (TestConflictsFeed): 4.9.3's
    // Conflict.read signs its request for the "users" resource type, which any
    // server, Cosmos DB included, refuses with 401.
    assert.equal(await statusOfFailure(() => container.conflict("c1", "p1").delete()), 404);
  });

  it("item delete", async () => {
    const item = client.database(dbId).container(containerId).item("u", "p1");
    const deleted = await item.delete();
    assert.equal(deleted.statusCode, 204);
    const gone = await item.read();
    assert.equal(gone.statusCode, 404);
    assert.equal(await statusOfFailure(() => item.delete()), 404);
  });

  it("hierarchical (MultiHash) partition key: create and read by [tenant, user]", async () => {
    const db = client.database(dbId);
    const created = await db.containers.create({
      id: hierId,
      partitionKey: { paths: ["/tenant", "/user"], kind: "MultiHash", version: 2 },
    });
    assert.equal(created.statusCode, 201);
    const { resource: def } = await db.container(hierId).read();
    assert.deepEqual(def.partitionKey.paths, ["/tenant", "/user"]);
    assert.equal(def.partitionKey.kind, "MultiHash");
    assert.equal(def.partitionKey.version, 2);

    const container = db.container(hierId);
    const item = await container.items.create({ id: "h1", tenant: "t1", user: "u1", x: 42 });
    assert.equal(item.statusCode, 201);

    const read = await container.item("h1", ["t1", "u1"]).read();
    assert.equal(read.statusCode, 200);
    assert.equal(read.resource.x, 42);
    assert.equal(read.resource.tenant, "t1");
    assert.equal(read.resource.user, "u1");

    const wrong = await container.item("h1", ["t1", "u2"]).read();
    assert.equal(wrong.statusCode, 404);
  });

  it("container throughput: readOffer, replace to 500 RU/s", async () => {
    const container = client.database(dbId).container(containerId);
    const { resource: containerDef } = await container.read();
    const { resource: offerDef, offer } = await container.readOffer();
    assert.ok(offerDef, "container has no offer");
    assert.ok(offer, "readOffer returned no Offer handle");
    assert.equal(offerDef.resource, containerDef._self);
    assert.equal(offerDef.offerResourceId, containerDef._rid);
    assert.equal(offerDef.content.offerThroughput, 400);

    const replaced = await offer.replace({ ...offerDef, content: { offerThroughput: 500 } });
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.resource.content.offerThroughput, 500);
    assert.notEqual(replaced.resource._etag, offerDef._etag, "offer etag did not change on replace");

    const { resource: reread } = await container.readOffer();
    assert.equal(reread.content.offerThroughput, 500);

    const { resource: direct } = await offer.read();
    assert.equal(direct.content.offerThroughput, 500);
  });

  it("deletes containers and the database", async () => {
    const db = client.database(dbId);
    const delC = await db.container(containerId).delete();
    assert.equal(delC.statusCode, 204);
    assert.equal(await statusOfFailure(() => db.container(containerId).read()), 404);
    const delH = await db.container(hierId).delete();
    assert.equal(delH.statusCode, 204);

    const { resources: left } = await db.containers.readAll().fetchAll();
    assert.deepEqual(left, []);

    const delDb = await db.delete();
    assert.equal(delDb.statusCode, 204);
    assert.equal(await statusOfFailure(() => db.read()), 404);
    const { resources: dbs } = await client.databases.readAll().fetchAll();
    assert.deepEqual(dbs, []);
  });
});

// Users, permissions and resource tokens, and partition key delete, through
// the official Azure Cosmos DB JavaScript SDK (@azure/cosmos, pinned in
// package.json): clients authenticated with nothing but a permission's
// _token (the resourceTokens option), and Container.deleteAllItemsForPartitionKey.
//
// Run: PARTITA_BIN=/path/to/partita node --test permissions.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

import { PermissionMode } from "@azure/cosmos";

import { makeClient, startPartita, statusOfFailure, stopServer } from "./server.mjs";

/** Returns a client authenticated with resource tokens only (no key). */
function tokenClient(env, resourceTokens) {
  return makeClient(env, { key: undefined, resourceTokens });
}

describe("partita users, permissions and resource tokens with @azure/cosmos", () => {
  let env; // from startPartita
  let client;
  let database;
  let orders; // container A, partition key /pk
  let other; // container B
  let user;
  const clients = [];

  /** A resource-token client disposed of when the suite ends. */
  function withTokens(resourceTokens) {
    const c = tokenClient(env, resourceTokens);
    clients.push(c);
    return c;
  }

  before(async () => {
    env = await startPartita();
    client = env.client;
    ({ database } = await client.databases.create({ id: "permDb" }));
    ({ container: orders } = await database.containers.create({ id: "orders", partitionKey: { paths: ["/pk"] } }));
    ({ container: other } = await database.containers.create({ id: "other", partitionKey: { paths: ["/pk"] } }));
    for (const pk of ["p1", "p2"]) {
      for (let i = 0; i < 3; i++) {
        await orders.items.create({ id: `${pk}-${i}`, pk, n: i });
      }
    }
    await other.items.create({ id: "b1", pk: "p1" });
    ({ user } = await database.users.create({ id: "alice" }));
  });

  after(async () => {
    for (const c of clients) c.dispose();
    await env?.stop();
  });

  it("creates, reads, replaces, upserts, lists, queries and deletes users", async () => {
    const created = await database.users.create({ id: "bob" });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, "bob");
    assert.ok(created.resource._rid && created.resource._self && created.resource._etag, "user has no system properties");
    assert.equal(created.resource._permissions, "permissions/");
    assert.equal(await statusOfFailure(() => database.users.create({ id: "bob" })), 409);

    const read = await database.user("bob").read();
    assert.equal(read.resource._rid, created.resource._rid);

    // A replace renames the user; its _rid stays.
    const renamed = await database.user("bob").replace({ id: "robert" });
    assert.equal(renamed.resource.id, "robert");
    assert.equal(renamed.resource._rid, created.resource._rid);
    assert.notEqual(renamed.resource._etag, created.resource._etag);
    assert.equal(await statusOfFailure(() => database.user("bob").read()), 404);

    const upserted = await database.users.upsert({ id: "carol" });
    assert.equal(upserted.statusCode, 201);
    assert.equal((await database.users.upsert({ id: "carol" })).statusCode, 200);

    const { resources: all } = await database.users.readAll().fetchAll();
    assert.deepEqual(all.map((u) => u.id).sort(), ["alice", "carol", "robert"]);
    const { resources: found } = await database.users
      .query({ query: "SELECT * FROM r WHERE r.id = @id", parameters: [{ name: "@id", value: "robert" }] })
      .fetchAll();
    assert.deepEqual(found.map((u) => u.id), ["robert"]);

    assert.equal((await database.user("robert").delete()).statusCode, 204);
    assert.equal((await database.user("carol").delete()).statusCode, 204);
    assert.equal(await statusOfFailure(() => database.user("robert").read()), 404);
  });

  it("creates, reads, replaces, upserts, lists and deletes permissions, each with a fresh _token", async () => {
    const def = { id: "readOrders", permissionMode: PermissionMode.Read, resource: orders.url };
    const created = await user.permissions.create(def);
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, "readOrders");
    assert.equal(created.resource.permissionMode, PermissionMode.Read);
    assert.equal(created.resource.resource, orders.url);
    assert.match(created.resource._token, /^type=resource&ver=1\.0&sig=/);
    assert.ok(created.resource._rid && created.resource._self && created.resource._etag, "permission has no system properties");
    assert.equal(await statusOfFailure(() => user.permissions.create(def)), 409);
    // One permission per resource and user (Cosmos DB's rule).
    assert.equal(await statusOfFailure(() => user.permissions.create({ ...def, id: "again" })), 409);

    const read = await user.permission("readOrders").read();
    assert.equal(read.resource._etag, created.resource._etag);
    assert.match(read.resource._token, /^type=resource&ver=1\.0&sig=/);

    const { resources: listed } = await user.permissions.readAll().fetchAll();
    assert.deepEqual(listed.map((p) => p.id), ["readOrders"]);
    assert.ok(listed[0]._token, "a listed permission has no _token");

    const upserted = await user.permissions.upsert({ id: "onOther", permissionMode: PermissionMode.All, resource: other.url });
    assert.equal(upserted.statusCode, 201);
    const replaced = await user.permission("onOther").replace({ id: "onOther", permissionMode: PermissionMode.Read, resource: other.url });
    assert.equal(replaced.statusCode, 200);
    assert.notEqual(replaced.resource._etag, upserted.resource._etag);
    assert.equal((await user.permission("onOther").delete()).statusCode, 204);
    assert.equal(await statusOfFailure(() => user.permission("onOther").read()), 404);
  });

  it("a Read token reads its container's items but writes nothing, and reaches no other container", async () => {
    const { resource: perm } = await user.permission("readOrders").read();
    const reader = withTokens({ [orders.url]: perm._token, [other.url]: perm._token });
    const readerOrders = reader.database("permDb").container("orders");

    const { resource: item } = await readerOrders.item("p1-0", "p1").read();
    assert.equal(item.n, 0);
    const { resources } = await readerOrders.items
      .query("SELECT VALUE c.id FROM c WHERE c.pk = 'p2' ORDER BY c.id", { partitionKey: "p2" })
      .fetchAll();
    assert.deepEqual(resources, ["p2-0", "p2-1", "p2-2"]);
    const { resources: everything } = await readerOrders.items.readAll().fetchAll();
    assert.equal(everything.length, 6);

    assert.equal(await statusOfFailure(() => readerOrders.items.create({ id: "nope", pk: "p1" })), 403);
    assert.equal(await statusOfFailure(() => readerOrders.item("p1-0", "p1").replace({ id: "p1-0", pk: "p1", n: 9 })), 403);
    assert.equal(await statusOfFailure(() => readerOrders.item("p1-0", "p1").delete()), 403);
    assert.equal(await statusOfFailure(() => readerOrders.deleteAllItemsForPartitionKey("p1")), 403);

    // The token of container orders, sent for container other.
    const readerOther = reader.database("permDb").container("other");
    assert.equal(await statusOfFailure(() => readerOther.item("b1", "p1").read()), 403);
    // Nor may it touch metadata.
    assert.equal(await statusOfFailure(() => reader.database("permDb").container("orders").delete()), 403);

    const { resource: unchanged } = await orders.item("p1-0", "p1").read();
    assert.equal(unchanged.n, 0);
  });

  it("an All token scoped to a partition key writes only there", async () => {
    const { resource: perm } = await user.permissions.create({
      id: "p1Only",
      permissionMode: PermissionMode.All,
      resource: other.url,
      resourcePartitionKey: ["p1"],
    });
    assert.deepEqual(perm.resourcePartitionKey, ["p1"]);
    const writer = withTokens({ [other.url]: perm._token });
    const c = writer.database("permDb").container("other");

    const created = await c.items.create({ id: "w1", pk: "p1" });
    assert.equal(created.statusCode, 201);
    assert.equal((await c.item("w1", "p1").replace({ id: "w1", pk: "p1", v: 2 })).statusCode, 200);
    assert.equal((await c.items.upsert({ id: "w2", pk: "p1" })).statusCode, 201);
    assert.equal((await c.item("w2", "p1").delete()).statusCode, 204);
    const { resources } = await c.items.query("SELECT VALUE c.id FROM c", { partitionKey: "p1" }).fetchAll();
    assert.deepEqual(resources.sort(), ["b1", "w1"]);

    assert.equal(await statusOfFailure(() => c.items.create({ id: "w3", pk: "p2" })), 403);
    assert.equal(await statusOfFailure(() => c.item("b1", "p2").read()), 403);
    // A query over every partition key is not within the token's scope.
    assert.equal(await statusOfFailure(() => c.items.query("SELECT * FROM c").fetchAll()), 403);
    assert.equal((await other.item("w3", "p2").read()).statusCode, 404);
  });

  it("refuses an expired token, a deleted permission's token and a modified token", async () => {
    // A user has one permission per resource: this one's are another's.
    const { user: dave } = await database.users.create({ id: "dave" });
    const { resource: shortLived } = await dave.permissions.create(
      { id: "brief", permissionMode: PermissionMode.Read, resource: orders.url, resourcePartitionKey: ["p2"] },
      { resourceTokenExpirySeconds: 1 },
    );
    const brief = withTokens({ [orders.url]: shortLived._token }).database("permDb").container("orders");
    assert.equal((await brief.item("p2-0", "p2").read()).statusCode, 200);
    await sleep(2100); // past the token's one second
    assert.equal(await statusOfFailure(() => brief.item("p2-0", "p2").read()), 403);

    const { resource: doomed } = await dave.permissions.create({
      id: "doomed",
      permissionMode: PermissionMode.All,
      resource: orders.url + "/docs/p1-1",
      resourcePartitionKey: ["p1"],
    });
    const itemClient = withTokens({ [orders.url + "/docs/p1-1"]: doomed._token, [orders.url]: doomed._token });
    const itemContainer = itemClient.database("permDb").container("orders");
    assert.equal((await itemContainer.item("p1-1", "p1").read()).statusCode, 200);
    // An item token covers that item only.
    assert.equal(await statusOfFailure(() => itemContainer.item("p1-2", "p1").read()), 403);
    await dave.permission("doomed").delete();
    assert.equal(await statusOfFailure(() => itemContainer.item("p1-1", "p1").read()), 401);

    // Change one character of the signed part: the MAC no longer matches.
    const { resource: good } = await user.permission("readOrders").read();
    const sig = good._token.slice(good._token.indexOf("sig=") + 4);
    const flipped = sig[0] === "A" ? "B" + sig.slice(1) : "A" + sig.slice(1);
    const forged = withTokens({ [orders.url]: "type=resource&ver=1.0&sig=" + flipped }).database("permDb").container("orders");
    assert.equal(await statusOfFailure(() => forged.item("p1-0", "p1").read()), 401);
  });

  it("deleting a user deletes its permissions and revokes their tokens", async () => {
    const { user: temp } = await database.users.create({ id: "temp" });
    const { resource: perm } = await temp.permissions.create({ id: "t", permissionMode: PermissionMode.Read, resource: orders.url });
    const c = withTokens({ [orders.url]: perm._token }).database("permDb").container("orders");
    assert.equal((await c.item("p1-0", "p1").read()).statusCode, 200);
    await temp.delete();
    assert.equal(await statusOfFailure(() => c.item("p1-0", "p1").read()), 401);
    // A new user of the same name does not get the old permissions back.
    const { user: again } = await database.users.create({ id: "temp" });
    const { resources } = await again.permissions.readAll().fetchAll();
    assert.equal(resources.length, 0);
  });
});

describe("partita partition key delete with @azure/cosmos", () => {
  let env;
  let client;

  before(async () => {
    env = await startPartita();
    client = env.client;
  });

  after(async () => {
    await env?.stop();
  });

  it("deletes exactly one logical partition's items", async () => {
    const { database } = await client.databases.create({ id: "pkdDb" });
    const { container } = await database.containers.create({
      id: "tenants",
      partitionKey: { paths: ["/tenant"] },
      uniqueKeyPolicy: { uniqueKeys: [{ paths: ["/email"] }] },
      indexingPolicy: { includedPaths: [{ path: "/*" }] },
    });
    const tenants = { contoso: 40, fabrikam: 25, tailspin: 1 };
    for (const [tenant, n] of Object.entries(tenants)) {
      for (let i = 0; i < n; i++) {
        await container.items.create({ id: `${tenant}-${i}`, tenant, email: `u${i}@${tenant}`, n: i });
      }
    }
    const res = await container.deleteAllItemsForPartitionKey("contoso");
    assert.ok(res.statusCode === 200 || res.statusCode === 202, `status ${res.statusCode}`);
    assert.ok(Number(res.headers["x-ms-request-charge"]) > 0, "no request charge");

    const count = async (tenant) => {
      const { resources } = await container.items
        .query({ query: "SELECT VALUE COUNT(1) FROM c WHERE c.tenant = @t", parameters: [{ name: "@t", value: tenant }] })
        .fetchAll();
      return resources[0];
    };
    assert.equal(await count("contoso"), 0);
    assert.equal(await count("fabrikam"), 25);
    assert.equal(await count("tailspin"), 1);
    assert.equal((await container.item("contoso-0", "contoso").read()).statusCode, 404);
    assert.equal((await container.item("fabrikam-0", "fabrikam").read()).statusCode, 200);

    // The partition is usable again at once, unique keys included.
    const again = await container.items.create({ id: "contoso-0", tenant: "contoso", email: "u0@contoso" });
    assert.equal(again.statusCode, 201);
    assert.equal(await count("contoso"), 1);

    // Deleting an empty or unknown partition is fine too.
    const none = await container.deleteAllItemsForPartitionKey("nobody");
    assert.equal(none.statusCode, 200);
  });

  // Against a cluster, node 1's data directory is checked against the
  // catalog its etcd member last knew; the other members run on.
  it("the store checks clean after the delete", async () => {
    // Stop the server and check its store (partita check): every derived
    // entry agrees with the items left.
    await stopServer(env.server.proc);
    const check = spawnSync(process.env.PARTITA_BIN, ["check", "--data", env.dataDir], { encoding: "utf8" });
    assert.equal(check.status, 0, `partita check failed:\n${check.stdout}\n${check.stderr}`);
  });
});

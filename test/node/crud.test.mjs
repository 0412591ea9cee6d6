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
import { spawn } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import { CosmosClient } from "@azure/cosmos";

const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;
const READY_MARKER = "is serving the Cosmos DB API at https://";

/** Returns a loopback port that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/**
 * Starts `bin serve` and resolves with {proc, output} once the ready line has
 * been printed; rejects (after killing the process) on early exit or timeout.
 */
function startServer(bin, port, dataDir) {
  const proc = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, "--data", dataDir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = { stdout: "", stderr: "" };
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (chunk) => {
    output.stderr += chunk;
  });
  proc.stdout.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        proc.kill("SIGKILL");
        reject(new Error(`${err.message}\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`));
      } else {
        resolve({ proc, output });
      }
    };
    const timer = setTimeout(
      () => finish(new Error(`partita did not print its ready line within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    proc.stdout.on("data", (chunk) => {
      output.stdout += chunk;
      if (output.stdout.includes(READY_MARKER)) finish();
    });
    proc.on("error", (err) => finish(new Error(`cannot start ${bin}: ${err.message}`)));
    proc.on("exit", (code, signal) =>
      finish(new Error(`partita exited before it was ready (code ${code}, signal ${signal})`)),
    );
  });
}

/** Sends SIGTERM and waits for the exit, escalating to SIGKILL after a timeout. */
function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_TIMEOUT_MS);
    proc.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill("SIGTERM");
  });
}

/** Runs fn, which must throw a Cosmos error; returns that error's status code. */
async function statusOfFailure(fn) {
  try {
    await fn();
  } catch (err) {
    assert.equal(typeof err.code, "number", `expected a Cosmos error with a numeric code, got ${err}`);
    return err.code;
  }
  assert.fail("expected the operation to fail, but it succeeded");
}

describe("partita with @azure/cosmos", () => {
  let server; // {proc, output}
  let dataDir;
  let client;
  let endpoint;

  before(async () => {
    const bin = process.env.PARTITA_BIN;
    if (!bin) {
      throw new Error(
        "PARTITA_BIN is not set: build the server (go build -o /tmp/partita ./cmd/partita) " +
          "and run PARTITA_BIN=/tmp/partita node --test",
      );
    }
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "partita-node-"));
    const port = await freePort();
    endpoint = `https://127.0.0.1:${port}/`;
    server = await startServer(bin, port, dataDir);
    assert.ok(
      server.output.stdout.includes(`${READY_MARKER}127.0.0.1:${port}/`),
      `ready line does not name ${endpoint}:\n${server.output.stdout}`,
    );
    const ca = fs.readFileSync(path.join(dataDir, "tls", "cert.pem"));
    client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent: new https.Agent({ ca }) });
  });

  after(async () => {
    client?.dispose();
    if (server) await stopServer(server.proc);
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
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

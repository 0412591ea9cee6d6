// Computed properties through @azure/cosmos: a container's computedProperties
// are read by queries as if they were top-level properties of each item — in
// a single partition, and across four physical partitions through the SDK's
// query plan (ORDER BY, GROUP BY, TOP), where each partition runs the SDK's
// rewritten query — while SELECT * leaves them out and definitions Cosmos DB
// refuses get 400. Before, the definition was stored and never evaluated:
// every query on a computed property found nothing.
//
// Run: PARTITA_BIN=/path/to/partita node --test computed.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { startPartita, statusOfFailure } from "./server.mjs";

describe("computed properties", () => {
  let env;
  let database;
  let container;
  const items = [];
  for (let i = 0; i < 24; i++) {
    items.push({ id: `i${String(i).padStart(2, "0")}`, pk: `p${i % 7}`, name: `Name-${i}`, n: (i * 5) % 24 });
  }
  const computedProperties = [
    { name: "cp_lower", query: "SELECT VALUE LOWER(c.name) FROM c" },
    { name: "cp_double", query: "SELECT VALUE c.n * 2 FROM c" },
    { name: "cp_bucket", query: "SELECT VALUE c.n % 3 FROM c" },
  ];

  before(async () => {
    env = await startPartita();
    ({ database } = await env.client.databases.create({ id: "computedDb" }));
    ({ container } = await database.containers.create(
      { id: "cp", partitionKey: { paths: ["/pk"], version: 2 }, computedProperties },
      { offerThroughput: 24000 }, // four physical partitions
    ));
    for (const item of items) await container.items.create(item);
  });

  after(async () => {
    await env?.stop();
  });

  it("keeps the definition", async () => {
    const { resource } = await container.read();
    assert.deepEqual(resource.computedProperties, computedProperties);
  });

  it("reads them in one partition", async () => {
    const { resources } = await container.items
      .query("SELECT c.id, c.cp_lower FROM c WHERE c.cp_lower = 'name-7'", { partitionKey: "p0" })
      .fetchAll();
    assert.deepEqual(resources, [{ id: "i07", cp_lower: "name-7" }]);
  });

  it("reads them across partitions, ordered and grouped by them", async () => {
    const top = await container.items
      .query("SELECT TOP 5 c.id, c.cp_double FROM c ORDER BY c.cp_double DESC")
      .fetchAll();
    const want = [...items]
      .sort((a, b) => b.n - a.n)
      .slice(0, 5)
      .map((it) => ({ id: it.id, cp_double: it.n * 2 }));
    assert.deepEqual(top.resources, want);

    const groups = await container.items
      .query("SELECT c.cp_bucket AS b, COUNT(1) AS n FROM c GROUP BY c.cp_bucket")
      .fetchAll();
    const counts = {};
    for (const it of items) counts[it.n % 3] = (counts[it.n % 3] ?? 0) + 1;
    assert.deepEqual(
      groups.resources.sort((x, y) => x.b - y.b),
      Object.entries(counts).map(([b, n]) => ({ b: Number(b), n })),
    );

    const paged = container.items.query("SELECT VALUE c.cp_lower FROM c WHERE c.cp_double >= 20", { maxItemCount: 3 });
    const got = [];
    while (paged.hasMoreResults()) got.push(...((await paged.fetchNext()).resources ?? []));
    assert.deepEqual(got.sort(), items.filter((it) => it.n * 2 >= 20).map((it) => it.name.toLowerCase()).sort());
  });

  it("leaves them out of SELECT *", async () => {
    const { resources } = await container.items.query("SELECT * FROM c WHERE c.id = 'i03'").fetchAll();
    assert.equal(resources.length, 1);
    assert.equal(resources[0].cp_lower, undefined);
    assert.equal(resources[0].name, "Name-3");
  });

  it("refuses definitions Cosmos DB refuses", async () => {
    const bad = [
      [{ name: "x", query: "SELECT LOWER(c.name) FROM c" }], // no VALUE
      [{ name: "x", query: "SELECT VALUE c.a FROM c WHERE c.b = 1" }],
      [{ name: "x", query: "SELECT VALUE GetCurrentDateTime() FROM c" }],
      [{ name: "id", query: "SELECT VALUE c.a FROM c" }],
      [
        { name: "x", query: "SELECT VALUE c.a FROM c" },
        { name: "x", query: "SELECT VALUE c.b FROM c" },
      ],
    ];
    for (const [i, props] of bad.entries()) {
      const code = await statusOfFailure(() =>
        database.containers.create({ id: `bad${i}`, partitionKey: { paths: ["/pk"] }, computedProperties: props }),
      );
      assert.equal(code, 400, JSON.stringify(props));
    }
  });
});

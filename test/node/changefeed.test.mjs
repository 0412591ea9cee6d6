// The change feed through @azure/cosmos's iterator: from the beginning, now,
// a point in time and a continuation token; per feed range, per EPK
// sub-range (start/end EPK headers) and per partition key; and a reader that
// follows the feed while the container splits (a 48 KB partition limit)
// sees each item's versions in order, none twice, and every last version.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { ChangeFeedStartFrom } from "@azure/cosmos";

import { startPartita } from "./server.mjs";

/** Reads an iterator until it answers 304; returns the items and the last continuation token. */
async function drain(iterator) {
  const items = [];
  let token;
  for (let i = 0; i < 1000; i++) {
    const res = await iterator.readNext();
    token = res.continuationToken;
    if (res.statusCode === 304) return { items, token };
    assert.equal(res.statusCode, 200);
    items.push(...res.result);
  }
  assert.fail("the change feed did not reach 304 in 1000 pages");
}

describe("change feed with @azure/cosmos", () => {
  let env;
  let database;

  before(async () => {
    env = await startPartita({ serverArgs: ["--rate-limit=off", "--partition-max-bytes=49152"] });
    ({ database } = await env.client.databases.createIfNotExists({ id: "cfDb" }));
  });

  after(async () => {
    await env?.stop();
  });

  it("reads from the beginning, now, a time and a continuation", async () => {
    const { container } = await database.containers.createIfNotExists(
      { id: "modes", partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 25000 }, // several physical partitions
    );
    const ranges = await container.getFeedRanges();
    assert.ok(ranges.length > 1, `${ranges.length} feed ranges`);
    for (let i = 0; i < 30; i++) await container.items.create({ id: `a${i}`, pk: `k${i % 7}`, v: 0 });

    const all = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 7 }));
    assert.equal(all.items.length, 30);
    assert.ok(all.items.every((d) => typeof d._lsn === "number"), "items carry _lsn");

    const now = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    assert.equal((await now.readNext()).statusCode, 304);

    const before = new Date(Date.now() - 1000);
    await new Promise((r) => setTimeout(r, 1100));
    await container.items.upsert({ id: "a3", pk: "k3", v: 1 });
    await container.items.create({ id: "b", pk: "k1", v: 0 });

    // "now" sees only what came after it; the continuation of the first
    // drain sees the same two changes; a start time before them too.
    const later = await drain(now);
    assert.deepEqual(later.items.map((d) => d.id).sort(), ["a3", "b"]);
    const resumed = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(all.token) }));
    assert.deepEqual(resumed.items.map((d) => `${d.id}:${d.v}`).sort(), ["a3:1", "b:0"]);
    const since = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(before) }));
    assert.ok(since.items.length >= 2 && since.items.length <= 31, `${since.items.length} items since ${before.toISOString()}`);
    const future = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(new Date(Date.now() + 3600e3)) }));
    assert.equal(future.items.length, 0);

    // Per feed range, and per half of each range (EPK sub-ranges): every
    // item exactly once.
    const perRange = [];
    for (const r of ranges) {
      perRange.push(...(await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(r) }))).items);
    }
    assert.deepEqual(perRange.map((d) => d.id).sort(), [...all.items.map((d) => d.id), "b"].sort());
    // The SDK exports no FeedRange constructor (getFeedRanges() makes
    // them), so the halves are made from a range's own class.
    const subRange = (r, minInclusive, maxExclusive) => Object.assign(new r.constructor(minInclusive, maxExclusive), { minInclusive, maxExclusive });
    const halves = [];
    for (const r of ranges) {
      const mid = r.minInclusive === "" ? "08" : r.minInclusive + "80";
      for (const half of [subRange(r, r.minInclusive, mid), subRange(r, mid, r.maxExclusive)]) {
        halves.push(...(await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(half) }))).items);
      }
    }
    assert.deepEqual(halves.map((d) => d.id).sort(), perRange.map((d) => d.id).sort());

    // One partition key.
    const k3 = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("k3") }));
    assert.deepEqual(k3.items.map((d) => d.id).sort(), ["a10", "a17", "a24", "a3"]);
  });

  it("skips changes written before a start time still ahead when it was read", async () => {
    // A feed started a few seconds ahead and read at once kept no start
    // time in its continuation, and delivered on its next page an item
    // written before its start (a change feed hunt).
    const { container } = await database.containers.createIfNotExists({ id: "futureStart", partitionKey: { paths: ["/pk"] } });
    const start = new Date(Date.now() + 3000);
    const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(start) });
    assert.equal((await drain(iterator)).items.length, 0);
    await container.items.create({ id: "early", pk: "k" });
    assert.deepEqual((await drain(iterator)).items.map((d) => d.id), []);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, start.getTime() + 1100 - Date.now())));
    await container.items.create({ id: "late", pk: "k" });
    assert.deepEqual((await drain(iterator)).items.map((d) => d.id), ["late"]);
  });

  it("delivers a transactional batch in one page, past maxItemCount", async () => {
    // Cosmos DB: "the number of items received could be higher than the
    // specified value so that the items changed by the same transaction are
    // returned as part of one atomic batch" (a change-feed hunt read a batch
    // of ten in pages of [3,3,3,3]).
    const { container } = await database.containers.createIfNotExists({ id: "txn", partitionKey: { paths: ["/pk"] } });
    await container.items.create({ id: "pre", pk: "t" });
    const ops = [];
    for (let i = 0; i < 10; i++) ops.push({ operationType: "Create", resourceBody: { id: `b${i}`, pk: "t" } });
    const res = await container.items.batch(ops, "t");
    assert.equal(res.code, 200);
    await container.items.create({ id: "post", pk: "t" });
    const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("t"), maxItemCount: 3 });
    const pages = [];
    for (let i = 0; i < 20; i++) {
      const page = await iterator.readNext();
      if (page.statusCode === 304) break;
      pages.push(page.result.map((d) => d.id));
    }
    const batch = Array.from({ length: 10 }, (_, i) => `b${i}`);
    assert.deepEqual(pages, [["pre", ...batch], ["post"]]);
  });

  it("follows the feed across splits", async () => {
    const { container } = await database.containers.createIfNotExists({ id: "splits", partitionKey: { paths: ["/pk"] } });
    const pad = "z".repeat(700);
    const last = new Map();
    const seen = new Map();
    const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 20 });
    const read = async () => {
      const res = await iterator.readNext();
      for (const d of res.result ?? []) {
        if (!seen.has(d.id)) seen.set(d.id, []);
        seen.get(d.id).push(d.v);
      }
      return res.statusCode;
    };
    let writing = true;
    const writer = (async () => {
      for (let v = 0; v < 3; v++) {
        for (let i = 0; i < 240; i++) {
          const id = `i${i}`;
          await container.items.upsert({ id, pk: `k${i % 30}`, v, pad });
          last.set(id, v);
        }
      }
      writing = false;
    })();
    while (writing) await read();
    await writer;
    for (let empty = 0; empty < 2; ) empty = (await read()) === 304 ? empty + 1 : 0;

    const ranges = await container.getFeedRanges();
    assert.ok(ranges.length >= 3, `${ranges.length} ranges after writing ~180 KB with a 48 KB limit`);
    assert.equal(seen.size, 240);
    for (const [id, v] of last) {
      const vs = seen.get(id);
      assert.equal(vs.at(-1), v, `${id}: versions ${vs}`);
      for (let j = 1; j < vs.length; j++) assert.ok(vs[j] > vs[j - 1], `${id}: versions ${vs} repeat or go back`);
    }
  });
});

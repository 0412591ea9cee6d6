// The last page of a cross-partition query the server answers itself (the
// gateway path: no partition key, no range id). @azure/cosmos's own
// crossPartition.spec runs `SELECT * FROM root r` over 20 items in a
// 5-partition container with maxItemCount 2 and fails when its async
// iterator yields anything after the last result ("iterator called after
// all results returned"), so over several physical partitions the last full
// page must not carry a continuation. Over one physical partition the
// gateway passes the query through, and a partition does not look ahead on
// a full page: the Go SDK's emulator test (TestCrossPartitionQuery) counts
// 5 pages for 20 results in pages of 5, the last one empty.
//
// Both with the gateway's refusals (--gateway-query=gateway) and with every
// query run server-side (--gateway-query=full).
//
// Run: PARTITA_BIN=/path/to/partita node --test paging.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { startPartita } from "./server.mjs";

for (const gatewayQuery of ["gateway", "full"]) {
  describe(`the last page of a fan-out (--gateway-query=${gatewayQuery})`, () => {
    let env;
    let multi; // 5 physical partitions, as the SDK's test container (25100 RU/s)
    let single; // 1 physical partition
    const ids = Array.from({ length: 20 }, (_, i) => String(i));

    before(async () => {
      env = await startPartita({ serverArgs: ["--rate-limit=off", `--gateway-query=${gatewayQuery}`] });
      const { database } = await env.client.databases.create({ id: "pagingDb" });
      ({ container: multi } = await database.containers.create(
        { id: "multi", partitionKey: { paths: ["/id"] } },
        { offerThroughput: 25100 },
      ));
      ({ container: single } = await database.containers.create({ id: "single", partitionKey: { paths: ["/id"] } }));
      for (const id of ids) {
        await multi.items.create({ id, spam: `eggs${id}` });
        await single.items.create({ id, spam: `eggs${id}` });
      }
    });

    after(async () => {
      await env?.stop();
    });

    it("five physical partitions and one", async () => {
      assert.equal((await multi.readPartitionKeyRanges().fetchAll()).resources.length, 5);
      assert.equal((await single.readPartitionKeyRanges().fetchAll()).resources.length, 1);
    });

    // The options of the SDK's crossPartition.spec "Validate Parallel Query As String" cases.
    const optionSets = [
      { maxItemCount: 2, maxDegreeOfParallelism: 0 },
      { maxItemCount: 2, maxDegreeOfParallelism: 1 },
      { maxItemCount: 2, maxDegreeOfParallelism: 3, bufferItems: true },
      { maxItemCount: 2, maxDegreeOfParallelism: -1, forceQueryPlan: true },
      { maxItemCount: 5 },
      { maxItemCount: 20 },
    ];

    it("over several partitions nothing follows the last result (the SDK's validateAsyncIterator)", async () => {
      for (const options of optionSets) {
        const what = JSON.stringify(options);
        const iter = multi.items.query("SELECT * FROM root r", options);

        const { resources: all } = await iter.fetchAll();
        assert.deepEqual(all.map((d) => d.id).sort(), [...ids].sort(), `fetchAll ${what}`);
        assert.equal(iter.hasMoreResults(), false, `hasMoreResults after fetchAll ${what}`);

        iter.reset();
        const fetched = [];
        let calls = 0;
        while (iter.hasMoreResults()) {
          const { resources } = await iter.fetchNext();
          calls++;
          assert.ok(calls <= 40, `fetchNext does not end ${what}`);
          fetched.push(...(resources ?? []));
          if (fetched.length < ids.length) assert.ok(iter.hasMoreResults(), `hasMoreResults ${what}`);
        }
        assert.equal(fetched.length, ids.length, `fetchNext ${what}`);

        iter.reset();
        const seen = [];
        let completed = false;
        for await (const { resources } of iter.getAsyncIterator()) {
          assert.equal(completed, false, `iterator called after all results returned ${what}`);
          seen.push(...resources);
          completed = seen.length === ids.length;
        }
        assert.equal(completed, true, `AsyncIterator should see all expected results ${what}`);
      }
    });

    it("over one partition a full last page still carries a continuation, as the emulator's", async () => {
      const iter = single.items.query("SELECT * FROM c", { maxItemCount: 5 });
      const pages = [];
      while (iter.hasMoreResults()) {
        pages.push((await iter.fetchNext()).resources.length);
        assert.ok(pages.length <= 10, "paging does not end");
      }
      assert.deepEqual(pages, [5, 5, 5, 5, 0]);
      const { resources } = await single.items.query("SELECT * FROM c", { maxItemCount: 7 }).fetchAll();
      assert.equal(resources.length, ids.length);
    });
  });
}

// A cross-partition ORDER BY resumed from a saved continuation in a new
// iterator (enableQueryControl): the SDK sends the range it stopped in its
// token together with the rewritten query whose filter placeholder now holds
// a resume filter (c.f >= v), where the first pages had `true`. The server
// must resume the token's position under that filter (it answered 400,
// "it belongs to another query", before). Pages of 4 over 4 partitions.
describe("a cross-partition ORDER BY resumed from its continuation (enableQueryControl)", () => {
  let env;
  let container;

  before(async () => {
    env = await startPartita({ serverArgs: ["--rate-limit=off"] });
    const { database } = await env.client.databases.create({ id: "resumeDb" });
    ({ container } = await database.containers.create(
      { id: "r", partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 24000 },
    ));
    for (let i = 0; i < 40; i++) {
      await container.items.create({ id: `i${String(i).padStart(2, "0")}`, pk: `p${i}`, f: i % 5, n: i });
    }
  });

  after(async () => {
    await env?.stop();
  });

  it("four physical partitions", async () => {
    assert.equal((await container.readPartitionKeyRanges().fetchAll()).resources.length, 4);
  });

  // Each query's order is total (ties broken by n), so resumed pages must
  // give exactly the rows of one uninterrupted run.
  for (const query of [
    "SELECT c.id FROM c ORDER BY c.id",
    "SELECT c.id FROM c ORDER BY c.id DESC",
    "SELECT c.id, c.n FROM c WHERE c.n > 10 ORDER BY c.n DESC",
    "SELECT VALUE c.n FROM c WHERE c.f >= 2 ORDER BY c.n",
    "SELECT c.id FROM c ORDER BY c.n OFFSET 5 LIMIT 20",
    "SELECT TOP 13 c.id FROM c ORDER BY c.n DESC",
  ]) {
    it(query, async () => {
      const { resources: want } = await container.items.query(query, { maxItemCount: 4 }).fetchAll();
      assert.ok(want.length > 4, `${query}: ${want.length} rows, want several pages`);
      const got = [];
      let token;
      for (let pages = 0; pages < 100; pages++) {
        const page = await container.items
          .query(query, { maxItemCount: 4, enableQueryControl: true, continuationToken: token })
          .fetchNext();
        got.push(...page.resources);
        token = page.continuationToken;
        if (!token) break;
      }
      assert.deepEqual(got, want);
    });
  }
});

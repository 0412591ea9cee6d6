// Throttling through @azure/cosmos: a 400 RU/s container hammered on one
// partition key answers 429 with a retry-after (seen with SDK retries off),
// and the SDK's own 429 retries (on by default) get every write through.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { makeClient, startPartita } from "./server.mjs";

describe("throttling with @azure/cosmos", () => {
  let env;
  let container;

  before(async () => {
    env = await startPartita({ serverArgs: ["--rate-limit=on"] });
    const { database } = await env.client.databases.createIfNotExists({ id: "throttleDb" });
    ({ container } = await database.containers.createIfNotExists(
      { id: "hot", partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 400 },
    ));
  });

  after(async () => {
    await env?.stop();
  });

  it("answers 429 with retry-after when one key takes more than the partition's budget", async () => {
    const raw = makeClient(env, { connectionPolicy: { retryOptions: { maxRetryAttemptCount: 0 } } });
    try {
      const hot = raw.database("throttleDb").container("hot");
      let ok = 0;
      const throttles = [];
      const deadline = Date.now() + 1500;
      const pad = "x".repeat(10 * 1024); // ~10 KB writes: ~10 RU each
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; Date.now() < deadline; i++) {
            try {
              await hot.items.upsert({ id: `w${w}-${i % 20}`, pk: "hot-key", v: i, pad });
              ok++;
            } catch (err) {
              assert.equal(err.code, 429, `unexpected error ${err}`);
              throttles.push(err);
            }
          }
        }),
      );
      assert.ok(throttles.length > 0, `${ok} writes served, none throttled`);
      for (const err of throttles.slice(0, 20)) {
        assert.equal(err.substatus, 3200);
        assert.ok(err.retryAfterInMs > 0 && err.retryAfterInMs < 5000, `retry-after ${err.retryAfterInMs}`);
      }
      // 400 RU/s for 1.5 s plus a one-second bucket: at most ~1000 RU of ~10 RU writes.
      assert.ok(ok < 120, `${ok} writes served in 1.5 s at 400 RU/s`);
    } finally {
      raw.dispose();
    }
  });

  it("gets every write through with the SDK's default 429 retries", async () => {
    await new Promise((r) => setTimeout(r, 1000)); // let the bucket refill
    const start = Date.now();
    const writes = 120;
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = w; i < writes; i += 6) {
          const { statusCode } = await container.items.upsert({ id: `sdk${i}`, pk: "hot-key" });
          assert.ok(statusCode === 200 || statusCode === 201, `status ${statusCode}`);
        }
      }),
    );
    const { resources } = await container.items
      .query({ query: "SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.id, 'sdk')" }, { partitionKey: "hot-key" })
      .fetchAll();
    assert.deepEqual(resources, [writes]);
    // ~120 writes of ~5 RU against 400 RU/s: beyond the first second's bucket, waits.
    assert.ok(Date.now() - start > 400, `took only ${Date.now() - start} ms: not throttled`);
  });
});

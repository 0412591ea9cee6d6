// Throttling through @azure/cosmos, by budget rather than by speed: a 400 RU/s
// container (one partition, a one-second bucket of 400 RU) takes one heavy
// write that costs several seconds of its budget. Until that debt is paid,
// every request to the partition answers 429 with a retry-after (seen with
// SDK retries off), and the SDK's own 429 retries (on by default) wait it out
// and get the write through. Nothing here depends on how fast the client is:
// the debt lasts (charge - 400) / 400 seconds, and the requests that meet it
// are sent right after the heavy write.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { makeClient, startPartita } from "./server.mjs";

describe("throttling with @azure/cosmos", () => {
  let env;
  let container;
  let heavyCharge = 0;

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

  it("answers 429 with retry-after while a write's charge is paid off", async () => {
    const raw = makeClient(env, { connectionPolicy: { retryOptions: { maxRetryAttemptCount: 0 } } });
    try {
      const hot = raw.database("throttleDb").container("hot");
      // 25,000 indexed numbers: about 2,500 RU, five seconds of this partition's budget.
      const nums = Array.from({ length: 25000 }, (_, i) => i);
      const heavy = await hot.items.upsert({ id: "heavy", pk: "hot-key", nums });
      heavyCharge = heavy.requestCharge;
      console.log(`heavy write: ${heavyCharge} RU`);
      assert.ok(heavyCharge > 2000, `the heavy write cost only ${heavyCharge} RU`);
      const throttles = [];
      for (let i = 0; i < 5; i++) {
        try {
          await hot.items.upsert({ id: `small${i}`, pk: "hot-key" });
        } catch (err) {
          assert.equal(err.code, 429, `unexpected error ${err}`);
          throttles.push(err);
        }
      }
      assert.equal(throttles.length, 5, `${5 - throttles.length} of 5 writes served while the partition was in debt`);
      const debtMs = ((heavyCharge - 400) / 400) * 1000;
      for (const err of throttles) {
        assert.equal(err.substatus, 3200);
        assert.ok(err.retryAfterInMs > 0 && err.retryAfterInMs <= debtMs + 1000, `retry-after ${err.retryAfterInMs} ms, debt ${debtMs} ms`);
      }
    } finally {
      raw.dispose();
    }
  });

  it("gets the write through with the SDK's default 429 retries", async () => {
    // Still in debt from the heavy write: the first attempt is refused, and
    // the SDK waits the retry-after and tries again.
    const res = await container.items.upsert({ id: "sdk", pk: "hot-key" });
    assert.ok(res.statusCode === 200 || res.statusCode === 201, `status ${res.statusCode}`);
    const failed = res.diagnostics.clientSideRequestStatistics.retryDiagnostics.failedAttempts;
    assert.ok(failed.length >= 1, "the write was never throttled");
    assert.ok(failed.every((f) => f.statusCode === 429), `failed attempts ${JSON.stringify(failed)}`);
    const { resources } = await container.items
      .query({ query: "SELECT VALUE c.id FROM c WHERE c.id = 'sdk' OR c.id = 'heavy'" }, { partitionKey: "hot-key" })
      .fetchAll();
    assert.deepEqual(resources.sort(), ["heavy", "sdk"]);
  });
});

// Cross-partition query conformance: @azure/cosmos runs ORDER BY, TOP,
// OFFSET/LIMIT, aggregates, GROUP BY and DISTINCT queries over a container
// with four physical partitions. The gateway refuses such queries (400/1004),
// the SDK fetches Partita's query plan, sends the rewritten query to every
// partition key range and merges the results itself; every answer here is
// compared with the same computation done in JavaScript over the inserted
// items. Each query also runs with forceQueryPlan, the SDK's plan-first path.
//
// Run: PARTITA_BIN=/path/to/partita node --test query.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

import { startPartita, statusOfFailure } from "./server.mjs";

// The SDK's own V2 hashing tells which range each item lives in (V2 is the
// algorithm on which every SDK and the service agree); the package's exports
// map hides the module, so it is loaded by file path.
const require = createRequire(import.meta.url);
const { hashPartitionKey } = require(
  path.join(path.dirname(require.resolve("@azure/cosmos")), "utils", "hashing", "hash.js"),
);

const RANGES = 4;
const THROUGHPUT = 24000; // ceil(24000 / 6000) = 4 physical partitions

/** The test items: numbers, strings, booleans, nested objects, missing fields. */
function makeItems() {
  const items = [];
  for (let i = 0; i < 40; i++) {
    const item = {
      id: `i${String(i).padStart(2, "0")}`,
      pk: `p${i % 13}`,
      n: (i * 17) % 41, // unique in 0..40
      cat: ["a", "b", "c", "d"][i % 4],
      name: `name-${String((i * 7) % 40).padStart(2, "0")}`, // unique
      flag: i % 3 === 0,
      nested: { lvl: i % 3, tag: `t${i % 5}` },
    };
    if (i % 7 !== 3) item.score = (i % 5) * 1.5; // missing in some items
    items.push(item);
  }
  return items;
}

const asc = (key) => (a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
const desc = (key) => (a, b) => -asc(key)(a, b);
const by =
  (...cmps) =>
  (a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  };
const sum = (xs) => xs.reduce((s, x) => s + x, 0);
const sortedJSON = (xs) => xs.map((x) => JSON.stringify(x)).sort();

describe("cross-partition queries through the query plan", () => {
  let env;
  let container;
  const items = makeItems();
  const modes = [{}, { forceQueryPlan: true }];

  /** Runs query with options in every mode and returns the result lists. */
  async function run(query, options = {}) {
    const out = [];
    for (const mode of modes) {
      const { resources } = await container.items.query(query, { ...options, ...mode }).fetchAll();
      out.push(resources);
    }
    return out;
  }

  /** Asserts query's results (in every mode) deep-equal want, in order. */
  async function expectExact(query, want, options) {
    for (const [i, got] of (await run(query, options)).entries()) {
      assert.deepEqual(got, want, `${JSON.stringify(query)} (mode ${JSON.stringify(modes[i])})`);
    }
  }

  /** Asserts query's results (in every mode) equal want as multisets. */
  async function expectSet(query, want, options) {
    for (const [i, got] of (await run(query, options)).entries()) {
      assert.deepEqual(sortedJSON(got), sortedJSON(want), `${JSON.stringify(query)} (mode ${JSON.stringify(modes[i])})`);
    }
  }

  /** Pages through query with fetchNext and maxItemCount; returns every result and the page count. */
  async function paged(query, maxItemCount, mode = {}) {
    const iter = container.items.query(query, { maxItemCount, ...mode });
    const results = [];
    let pages = 0;
    while (iter.hasMoreResults()) {
      // A merging pipeline may answer a fetch with no resources at all.
      const resources = (await iter.fetchNext()).resources ?? [];
      assert.ok(resources.length <= maxItemCount, `a page of ${resources.length} > maxItemCount ${maxItemCount}`);
      results.push(...resources);
      pages++;
      assert.ok(pages < 200, "paging does not end");
    }
    return { results, pages };
  }

  before(async () => {
    env = await startPartita();
    const { database } = await env.client.databases.create({ id: "queryDb" });
    ({ container } = await database.containers.create(
      {
        id: "multi",
        partitionKey: { paths: ["/pk"], version: 2 },
        indexingPolicy: {
          indexingMode: "consistent",
          includedPaths: [{ path: "/*" }],
          compositeIndexes: [
            [
              { path: "/cat", order: "ascending" },
              { path: "/n", order: "descending" },
            ],
            [
              { path: "/nested/lvl", order: "ascending" },
              { path: "/n", order: "ascending" },
            ],
          ],
        },
      },
      { offerThroughput: THROUGHPUT },
    ));
    for (const item of items) {
      await container.items.create(item);
    }
  });

  after(async () => {
    await env?.stop();
  });

  it("has four physical partitions, each holding some of the items", async () => {
    const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
    assert.equal(ranges.length, RANGES);
    const def = { paths: ["/pk"], kind: "Hash", version: 2 };
    const perRange = new Map(ranges.map((r) => [r.id, 0]));
    for (const item of items) {
      const epk = hashPartitionKey([item.pk], def);
      const r = ranges.find((r) => r.minInclusive <= epk && (r.maxExclusive === "FF" || epk < r.maxExclusive));
      assert.ok(r, `no range holds ${epk}`);
      perRange.set(r.id, perRange.get(r.id) + 1);
    }
    for (const [id, n] of perRange) assert.ok(n > 0, `range ${id} holds no items: ${[...perRange]}`);
  });

  /** Strips the system properties the server adds to stored items. */
  const userFields = ({ _rid, _etag, _ts, _self, _attachments, ...rest }) => {
    assert.ok(_rid && _etag && _ts, `item ${rest.id} lacks system properties`);
    return rest;
  };

  it("ORDER BY one key, ascending and descending, whole items and projections", async () => {
    for (const got of await run("SELECT * FROM c ORDER BY c.n")) {
      assert.deepEqual(got.map(userFields), [...items].sort(asc((x) => x.n)));
    }
    await expectExact(
      "SELECT c.id, c.n FROM c ORDER BY c.n DESC",
      [...items].sort(desc((x) => x.n)).map((x) => ({ id: x.id, n: x.n })),
    );
    await expectExact(
      "SELECT VALUE c.name FROM c WHERE c.n >= 10 ORDER BY c.name DESC",
      items
        .filter((x) => x.n >= 10)
        .map((x) => x.name)
        .sort()
        .reverse(),
    );
    await expectExact(
      {
        query: "SELECT VALUE c.id FROM c WHERE c.cat IN (@a, @b) ORDER BY c.id ASC",
        parameters: [
          { name: "@a", value: "a" },
          { name: "@b", value: "c" },
        ],
      },
      items
        .filter((x) => x.cat === "a" || x.cat === "c")
        .map((x) => x.id)
        .sort(),
    );
  });

  it("ORDER BY several keys (composite index)", async () => {
    await expectExact(
      "SELECT VALUE c.id FROM c ORDER BY c.cat ASC, c.n DESC",
      [...items].sort(by(asc((x) => x.cat), desc((x) => x.n))).map((x) => x.id),
    );
    await expectExact(
      "SELECT c.id, c.nested.lvl AS lvl FROM c ORDER BY c.nested.lvl, c.n",
      [...items].sort(by(asc((x) => x.nested.lvl), asc((x) => x.n))).map((x) => ({ id: x.id, lvl: x.nested.lvl })),
    );
  });

  it("ORDER BY several keys in pages, narrowed by a filter on the first (composite index read in order)", async () => {
    const want = [...items].sort(by(asc((x) => x.cat), desc((x) => x.n))).map((x) => x.id);
    for (const mode of modes) {
      const { results, pages } = await paged("SELECT VALUE c.id FROM c ORDER BY c.cat ASC, c.n DESC", 3, mode);
      assert.deepEqual(results, want, `mode ${JSON.stringify(mode)}`);
      assert.ok(pages >= want.length / 3, `${pages} pages`);
      const inverted = await paged("SELECT VALUE c.id FROM c ORDER BY c.cat DESC, c.n ASC", 4, mode);
      assert.deepEqual(inverted.results, [...want].reverse(), `inverted, mode ${JSON.stringify(mode)}`);
      const b = await paged("SELECT VALUE c.id FROM c WHERE c.cat = 'b' ORDER BY c.cat DESC, c.n ASC", 2, mode);
      assert.deepEqual(
        b.results,
        items
          .filter((x) => x.cat === "b")
          .sort(asc((x) => x.n))
          .map((x) => x.id),
        `narrowed, mode ${JSON.stringify(mode)}`,
      );
      const range = await paged("SELECT VALUE c.id FROM c WHERE c.cat >= 'c' ORDER BY c.cat, c.n DESC", 3, mode);
      assert.deepEqual(
        range.results,
        want.filter((id) => items.find((x) => x.id === id).cat >= "c"),
        `range, mode ${JSON.stringify(mode)}`,
      );
    }
  });

  it("TOP, with and without ORDER BY", async () => {
    await expectExact(
      "SELECT TOP 5 VALUE c.id FROM c ORDER BY c.n",
      [...items].sort(asc((x) => x.n)).slice(0, 5).map((x) => x.id),
    );
    await expectExact(
      "SELECT TOP 3 c.name FROM c WHERE c.flag ORDER BY c.name DESC",
      items
        .filter((x) => x.flag)
        .map((x) => x.name)
        .sort()
        .reverse()
        .slice(0, 3)
        .map((name) => ({ name })),
    );
    for (const got of await run("SELECT TOP 7 VALUE c.id FROM c")) {
      assert.equal(got.length, 7);
      assert.equal(new Set(got).size, 7, `duplicates in ${got}`);
      for (const id of got) assert.ok(items.some((x) => x.id === id), `unknown id ${id}`);
    }
    await expectExact("SELECT TOP 0 * FROM c", []);
  });

  it("OFFSET/LIMIT, with and without ORDER BY", async () => {
    await expectExact(
      "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 5 LIMIT 10",
      items
        .map((x) => x.n)
        .sort((a, b) => a - b)
        .slice(5, 15),
    );
    await expectExact(
      { query: "SELECT c.id FROM c ORDER BY c.n DESC OFFSET @o LIMIT @l", parameters: [
        { name: "@o", value: 38 },
        { name: "@l", value: 5 },
      ] },
      [...items].sort(desc((x) => x.n)).slice(38).map((x) => ({ id: x.id })),
    );
    for (const got of await run("SELECT VALUE c.id FROM c OFFSET 3 LIMIT 4")) {
      assert.equal(got.length, 4);
      assert.equal(new Set(got).size, 4, `duplicates in ${got}`);
    }
    for (const got of await run("SELECT VALUE c.id FROM c OFFSET 37 LIMIT 10")) {
      assert.equal(got.length, 3, `OFFSET 37 of 40 gave ${got}`);
    }
  });

  it("SELECT VALUE aggregates: COUNT, SUM, AVG, MIN, MAX", async () => {
    const scores = items.filter((x) => x.score !== undefined).map((x) => x.score);
    await expectExact("SELECT VALUE COUNT(1) FROM c", [items.length]);
    await expectExact("SELECT VALUE COUNT(c.score) FROM c", [scores.length]);
    await expectExact("SELECT VALUE SUM(c.n) FROM c", [sum(items.map((x) => x.n))]);
    await expectExact("SELECT VALUE AVG(c.score) FROM c", [sum(scores) / scores.length]);
    await expectExact("SELECT VALUE MIN(c.name) FROM c", [items.map((x) => x.name).sort()[0]]);
    await expectExact("SELECT VALUE MAX(c.n) FROM c WHERE c.cat = 'b'", [
      Math.max(...items.filter((x) => x.cat === "b").map((x) => x.n)),
    ]);
    await expectExact("SELECT VALUE MIN(c.nested.lvl) FROM c WHERE c.flag = false", [
      Math.min(...items.filter((x) => !x.flag).map((x) => x.nested.lvl)),
    ]);
    // Over no rows: COUNT and SUM are 0, AVG, MIN and MAX undefined (no result).
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000", [0]);
    await expectExact("SELECT VALUE SUM(c.n) FROM c WHERE c.n > 1000", [0]);
    await expectExact("SELECT VALUE AVG(c.n) FROM c WHERE c.n > 1000", []);
    await expectExact("SELECT VALUE MAX(c.n) FROM c WHERE c.n > 1000", []);
  });

  it("counts whose filter the index decides (read from index entries alone)", async () => {
    const count = (f) => items.filter(f).length;
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'b'", [count((x) => x.cat === "b")]);
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.cat IN ('a', 'b', 'zz')", [
      count((x) => x.cat === "a" || x.cat === "b"),
    ]);
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.n >= 10 AND c.n < 30", [count((x) => x.n >= 10 && x.n < 30)]);
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.n BETWEEN 5 AND 25 AND c.n > 7", [
      count((x) => x.n >= 5 && x.n <= 25 && x.n > 7),
    ]);
    await expectExact("SELECT COUNT(1) AS k FROM c WHERE c.cat = 'a' AND c.flag = true", [
      { k: count((x) => x.cat === "a" && x.flag === true) },
    ]);
    await expectExact(
      { query: "SELECT VALUE COUNT(1) FROM c WHERE c.cat = @c", parameters: [{ name: "@c", value: "c" }] },
      [count((x) => x.cat === "c")],
    );
    // An equality intersected with a range on another path.
    await expectExact("SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'a' AND c.n BETWEEN 10 AND 40", [
      count((x) => x.cat === "a" && x.n >= 10 && x.n <= 40),
    ]);
  });

  it("aggregates without VALUE", async () => {
    const ns = items.map((x) => x.n);
    await expectExact(
      "SELECT COUNT(1) AS cnt, SUM(c.n) AS total, MIN(c.n) AS lo, MAX(c.n) AS hi, AVG(c.n) AS mean FROM c",
      [{ cnt: ns.length, total: sum(ns), lo: Math.min(...ns), hi: Math.max(...ns), mean: sum(ns) / ns.length }],
    );
    await expectExact("SELECT COUNT(1) FROM c WHERE c.flag", [{ $1: items.filter((x) => x.flag).length }]);
  });

  it("aggregates with an ORDER BY answer their one row (the SDK's own aggregate test queries)", async () => {
    // @azure/cosmos's aggregateQuery.spec sends these with maxItemCount 1 and
    // maxDegreeOfParallelism 2, and checks fetchAll, fetchNext and the async
    // iterator; the ORDER BY cannot reorder a single aggregate row.
    const ns = items.map((x) => x.n);
    const names = items.map((x) => x.name).sort();
    const cases = [
      ["SELECT VALUE AVG(r.n) FROM r WHERE IS_NUMBER(r.n) ORDER BY r.n", [sum(ns) / ns.length]],
      ["SELECT VALUE COUNT(r.n) FROM r ORDER BY r.n", [ns.length]],
      ["SELECT VALUE MAX(r.name) FROM r ORDER BY r.name", [names[names.length - 1]]],
      ["SELECT VALUE MIN(r.name) FROM r ORDER BY r.name DESC", [names[0]]],
      ["SELECT VALUE SUM(r.n) FROM r WHERE IS_NUMBER(r.n) ORDER BY r.n", [sum(ns)]],
      ["SELECT MAX(r.n) AS hi FROM r ORDER BY r.n", [{ hi: Math.max(...ns) }]],
    ];
    for (const [query, want] of cases) {
      await expectExact(query, want, { maxItemCount: 1, maxDegreeOfParallelism: 2 });
      for (const mode of modes) {
        const seen = [];
        let done = false;
        for await (const { resources } of container.items
          .query(query, { maxItemCount: 1, maxDegreeOfParallelism: 2, ...mode })
          .getAsyncIterator()) {
          assert.equal(done, false, `${query}: a page after the aggregate's row`);
          seen.push(...resources);
          done = seen.length === want.length;
        }
        assert.deepEqual(seen, want, `${query} through the async iterator (mode ${JSON.stringify(mode)})`);
      }
    }
    // One logical partition: the server answers the whole query.
    const inP3 = items.filter((x) => x.pk === "p3").map((x) => x.n);
    const { resources } = await container.items
      .query("SELECT VALUE AVG(r.n) FROM r ORDER BY r.n", { partitionKey: "p3" })
      .fetchAll();
    assert.deepEqual(resources, [sum(inP3) / inP3.length]);
  });

  it("GROUP BY with aggregates", async () => {
    const groups = new Map();
    for (const x of items) {
      if (!groups.has(x.cat)) groups.set(x.cat, []);
      groups.get(x.cat).push(x);
    }
    const want = [...groups].map(([cat, xs]) => {
      const scores = xs.filter((x) => x.score !== undefined).map((x) => x.score);
      return {
        cat,
        cnt: xs.length,
        total: sum(xs.map((x) => x.n)),
        best: Math.max(...scores),
        mean: sum(xs.map((x) => x.n)) / xs.length,
      };
    });
    await expectSet(
      "SELECT c.cat, COUNT(1) AS cnt, SUM(c.n) AS total, MAX(c.score) AS best, AVG(c.n) AS mean FROM c GROUP BY c.cat",
      want,
    );
    const pairs = new Map();
    for (const x of items) {
      const k = JSON.stringify([x.nested.lvl, x.flag]);
      pairs.set(k, (pairs.get(k) ?? 0) + 1);
    }
    await expectSet(
      "SELECT c.nested.lvl AS lvl, c.flag, COUNT(1) AS cnt FROM c GROUP BY c.nested.lvl, c.flag",
      [...pairs].map(([k, cnt]) => {
        const [lvl, flag] = JSON.parse(k);
        return { lvl, flag, cnt };
      }),
    );
    await expectSet("SELECT VALUE c.cat FROM c GROUP BY c.cat", [...groups.keys()]);
    await expectSet(
      "SELECT VALUE COUNT(1) FROM c GROUP BY c.nested.tag",
      [0, 1, 2, 3, 4].map((t) => items.filter((x) => x.nested.tag === `t${t}`).length),
    );
    await expectSet(
      "SELECT VALUE MIN(c.n) FROM c WHERE c.flag GROUP BY c.cat",
      [...groups].flatMap(([, xs]) => {
        const ns = xs.filter((x) => x.flag).map((x) => x.n);
        return ns.length ? [Math.min(...ns)] : [];
      }),
    );
  });

  it("DISTINCT, VALUE and not, ordered and not", async () => {
    const cats = [...new Set(items.map((x) => x.cat))];
    await expectSet("SELECT DISTINCT VALUE c.cat FROM c", cats);
    await expectExact("SELECT DISTINCT VALUE c.cat FROM c ORDER BY c.cat DESC", [...cats].sort().reverse());
    const pairs = [...new Set(items.map((x) => JSON.stringify({ cat: x.cat, flag: x.flag })))].map((s) => JSON.parse(s));
    await expectSet("SELECT DISTINCT c.cat, c.flag FROM c", pairs);
    // (The SDK's DISTINCT drops falsy values such as 0 and false, so the
    // values here are not.)
    await expectSet("SELECT DISTINCT VALUE c.nested.tag FROM c WHERE c.n < 20", [
      ...new Set(items.filter((x) => x.n < 20).map((x) => x.nested.tag)),
    ]);
    for (const got of await run("SELECT DISTINCT TOP 2 VALUE c.cat FROM c")) {
      assert.equal(got.length, 2);
      assert.equal(new Set(got).size, 2, `duplicates in ${got}`);
    }
    await expectExact(
      "SELECT DISTINCT VALUE c.nested.tag FROM c ORDER BY c.nested.tag OFFSET 1 LIMIT 3",
      [...new Set(items.map((x) => x.nested.tag))].sort().slice(1, 4),
    );
  });

  it("SELECT VALUE projections across partitions", async () => {
    await expectSet(
      "SELECT VALUE {\"id\": c.id, \"twice\": c.n * 2, \"tag\": c.nested.tag} FROM c WHERE c.flag",
      items.filter((x) => x.flag).map((x) => ({ id: x.id, twice: x.n * 2, tag: x.nested.tag })),
    );
    await expectSet(
      "SELECT VALUE c.score FROM c",
      items.filter((x) => x.score !== undefined).map((x) => x.score),
    );
  });

  it("the newer system functions (STRINGSPLIT, STRINGJOIN, CHOOSE, OBJECTTOARRAY, ARRAY_SUM, SETDIFFERENCE, YEAR)", async () => {
    await expectSet(
      "SELECT VALUE {\"id\": c.id, \"parts\": STRINGSPLIT(c.name, \"-\"), \"joined\": STRINGJOIN(STRINGSPLIT(c.name, \"-\"), \"+\"), " +
        "\"second\": CHOOSE(2, \"a\", c.n, \"c\"), \"pairs\": OBJECTTOARRAY({\"n\": c.n}), \"sum\": ARRAY_SUM([c.n, 1]), " +
        "\"diff\": SETDIFFERENCE([1, 2, c.n], [2]), \"year\": YEAR(\"2024-01-15T10:20:30Z\")} FROM c WHERE c.flag",
      items
        .filter((x) => x.flag)
        .map((x) => ({
          id: x.id,
          parts: x.name.split("-"),
          joined: x.name.split("-").join("+"),
          second: x.n,
          pairs: [{ k: "n", v: x.n }],
          sum: x.n + 1,
          diff: [...new Set([1, 2, x.n])].filter((v) => v !== 2),
          year: 2024,
        })),
    );
  });

  it("pages with a small maxItemCount give the same results, without duplicates", async () => {
    for (const mode of modes) {
      const ordered = await paged("SELECT c.id FROM c ORDER BY c.n DESC", 3, mode);
      assert.deepEqual(
        ordered.results.map((x) => x.id),
        [...items].sort(desc((x) => x.n)).map((x) => x.id),
      );
      assert.ok(ordered.pages >= Math.ceil(items.length / 3), `only ${ordered.pages} pages`);

      const plain = await paged("SELECT VALUE c.id FROM c", 4, mode);
      assert.deepEqual([...plain.results].sort(), items.map((x) => x.id).sort());

      const top = await paged("SELECT TOP 11 VALUE c.n FROM c ORDER BY c.n", 2, mode);
      assert.deepEqual(
        top.results,
        items
          .map((x) => x.n)
          .sort((a, b) => a - b)
          .slice(0, 11),
      );

      const window = await paged("SELECT VALUE c.name FROM c ORDER BY c.name OFFSET 4 LIMIT 9", 2, mode);
      assert.deepEqual(window.results, items.map((x) => x.name).sort().slice(4, 13));

      const grouped = await paged("SELECT c.cat, COUNT(1) AS cnt FROM c GROUP BY c.cat", 1, mode);
      assert.deepEqual(
        sortedJSON(grouped.results),
        sortedJSON(["a", "b", "c", "d"].map((cat) => ({ cat, cnt: items.filter((x) => x.cat === cat).length }))),
      );

      // An equality intersected with a range on another path, resumed.
      const intersected = await paged("SELECT VALUE c.id FROM c WHERE c.cat = 'b' AND c.n > 20", 2, mode);
      assert.deepEqual(
        [...intersected.results].sort(),
        items
          .filter((x) => x.cat === "b" && x.n > 20)
          .map((x) => x.id)
          .sort(),
      );

      const distinct = await paged("SELECT DISTINCT VALUE c.nested.tag FROM c", 2, mode);
      assert.deepEqual([...distinct.results].sort(), ["t0", "t1", "t2", "t3", "t4"]);
    }
  });

  it("a query naming the partition key in WHERE still works", async () => {
    const inP3 = items.filter((x) => x.pk === "p3");
    assert.ok(inP3.length > 1);
    await expectExact(
      "SELECT VALUE c.id FROM c WHERE c.pk = 'p3' ORDER BY c.n DESC",
      [...inP3].sort(desc((x) => x.n)).map((x) => x.id),
    );
    await expectExact(
      { query: "SELECT VALUE COUNT(1) FROM c WHERE c.pk = @pk", parameters: [{ name: "@pk", value: "p3" }] },
      [inP3.length],
    );
    const want = [...new Set(inP3.map((x) => x.cat))].map((cat) => ({
      cat,
      hi: Math.max(...inP3.filter((x) => x.cat === cat).map((x) => x.n)),
    }));
    await expectSet("SELECT c.cat, MAX(c.n) AS hi FROM c WHERE c.pk = 'p3' AND c.n >= 0 GROUP BY c.cat", want);
    // With the partition key given as an option the SDK routes to one range.
    const { resources } = await container.items
      .query("SELECT VALUE c.id FROM c ORDER BY c.n", { partitionKey: "p3" })
      .fetchAll();
    assert.deepEqual(
      resources,
      [...inP3].sort(asc((x) => x.n)).map((x) => x.id),
    );
  });

  it("a query Partita cannot plan across partitions is refused with 400", async () => {
    assert.equal(
      await statusOfFailure(() =>
        container.items.query("SELECT c.cat, ABS(AVG(c.n)) AS a FROM c GROUP BY c.cat").fetchAll(),
      ),
      400,
    );
  });
});

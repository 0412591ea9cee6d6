// Spatial queries through @azure/cosmos: ST_DISTANCE, ST_WITHIN, ST_INTERSECTS,
// ST_ISVALID and ST_ISVALIDDETAILED over GeoJSON locations stored in items,
// in a container that declares a spatial index and in one that does not
// (the results must not depend on it), across partitions and in one.
// Expected values are the Cosmos DB documentation's examples (st-distance,
// st-within, st-isvaliddetailed) and shapes whose answers are plain.
//
// Run: PARTITA_BIN=/path/to/partita node --test spatial.test.mjs

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { startPartita } from "./server.mjs";

const reference = { type: "Point", coordinates: [-122.11758113953535, 47.66901087006131] };
const campus = {
  type: "Polygon",
  coordinates: [
    [
      [-122.13236581015025, 47.64606476313813],
      [-122.13221982500913, 47.633757091363975],
      [-122.11840598103835, 47.641749416109235],
      [-122.12061400629656, 47.64589264786028],
      [-122.13236581015025, 47.64606476313813],
    ],
  ],
};

const offices = [
  { id: "hq", pk: "a", name: "Headquarters", location: { type: "Point", coordinates: [-122.12826822304672, 47.63980239335718] } },
  { id: "rd", pk: "b", name: "Research and development", location: { type: "Point", coordinates: [-96.84368664765994, 46.81297794314663] } },
  { id: "walk", pk: "c", name: "a walk across campus", location: { type: "LineString", coordinates: [[-122.14, 47.64], [-122.11, 47.64]] } },
  { id: "bad", pk: "d", name: "out of range", location: { type: "Point", coordinates: [133.75682784306348, -184.38876194345323] } },
  { id: "text", pk: "e", name: "not GeoJSON", location: "47.6,-122.1" },
  { id: "none", pk: "f", name: "no location" },
];

describe("spatial queries with @azure/cosmos", () => {
  let env;
  const containers = {};

  before(async () => {
    env = await startPartita();
    const { database } = await env.client.databases.create({ id: "spatialDb" });
    ({ container: containers.indexed } = await database.containers.create(
      {
        id: "indexed",
        partitionKey: { paths: ["/pk"] },
        indexingPolicy: {
          includedPaths: [{ path: "/*" }],
          spatialIndexes: [{ path: "/location/*", types: ["Point", "LineString", "Polygon", "MultiPolygon"] }],
        },
      },
      { offerThroughput: 12000 }, // two physical partitions
    ));
    ({ container: containers.plain } = await database.containers.create({ id: "plain", partitionKey: { paths: ["/pk"] } }));
    for (const c of Object.values(containers)) {
      for (const o of offices) await c.items.create(o);
    }
  });

  after(async () => {
    await env?.stop();
  });

  for (const which of ["indexed", "plain"]) {
    describe(`in a container ${which === "indexed" ? "with" : "without"} a spatial index`, () => {
      const query = async (q, options) => (await containers[which].items.query(q, options).fetchAll()).resources;

      it("ST_DISTANCE in meters, as documented (3.345269817267368 and 1907.438421299902 km)", async () => {
        const rows = await query({
          query: "SELECT o.id, ST_DISTANCE(o.location, @ref) / 1000 AS km FROM o WHERE IS_DEFINED(o.location) AND o.location.type = 'Point' AND ST_ISVALID(o.location)",
          parameters: [{ name: "@ref", value: reference }],
        });
        const km = Object.fromEntries(rows.map((r) => [r.id, r.km]));
        assert.deepEqual(Object.keys(km).sort(), ["hq", "rd"]);
        assert.ok(Math.abs(km.hq - 3.345269817267368) < 1e-6, `hq: ${km.hq}`);
        assert.ok(Math.abs(km.rd - 1907.438421299902) < 1e-3, `rd: ${km.rd}`);

        const near = await query({
          query: "SELECT VALUE o.id FROM o WHERE ST_DISTANCE(o.location, @ref) < 5000",
          parameters: [{ name: "@ref", value: reference }],
        });
        assert.deepEqual(near.sort(), ["hq", "walk"]);
      });

      it("ST_WITHIN and ST_INTERSECTS against the documented campus", async () => {
        const within = await query({ query: "SELECT VALUE o.id FROM o WHERE ST_WITHIN(o.location, @campus)", parameters: [{ name: "@campus", value: campus }] });
        assert.deepEqual(within, ["hq"]);
        const crossing = await query({
          query: "SELECT VALUE o.id FROM o WHERE ST_INTERSECTS(@campus, o.location)",
          parameters: [{ name: "@campus", value: campus }],
        });
        assert.deepEqual(crossing.sort(), ["hq", "walk"]);
        // One logical partition.
        const one = await query(
          { query: "SELECT VALUE ST_WITHIN(o.location, @campus) FROM o", parameters: [{ name: "@campus", value: campus }] },
          { partitionKey: "a" },
        );
        assert.deepEqual(one, [true]);
      });

      it("ST_ISVALID and ST_ISVALIDDETAILED; what is not GeoJSON is undefined", async () => {
        const rows = await query("SELECT o.id, ST_ISVALID(o.location) AS valid, ST_ISVALIDDETAILED(o.location) AS detail FROM o");
        const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
        assert.deepEqual(byId.hq, { id: "hq", valid: true, detail: { valid: true } });
        assert.deepEqual(byId.walk, { id: "walk", valid: true, detail: { valid: true } });
        assert.deepEqual(byId.bad, {
          id: "bad",
          valid: false,
          detail: { valid: false, reason: "Latitude values must be between -90 and 90 degrees." },
        });
        assert.deepEqual(byId.text, { id: "text" });
        assert.deepEqual(byId.none, { id: "none" });
        const open = await query({
          query: "SELECT VALUE ST_ISVALIDDETAILED(@p) FROM o WHERE o.id = 'hq'",
          parameters: [{ name: "@p", value: { type: "Polygon", coordinates: [[[31.8, -5], [31.8, -4.7], [32, -4.7], [32, -5]]] } }],
        });
        assert.deepEqual(open, [
          {
            valid: false,
            reason:
              "The Polygon input is not valid because the start and end points of the ring number 1 are not the same. Each ring of a Polygon must have the same start and end points.",
          },
        ]);
        // An invalid location gives no distance, so a filter on it is never true.
        const far = await query({
          query: "SELECT VALUE o.id FROM o WHERE ST_DISTANCE(o.location, @ref) >= 0",
          parameters: [{ name: "@ref", value: reference }],
        });
        assert.deepEqual(far.sort(), ["hq", "rd", "walk"]);
      });
    });
  }
});

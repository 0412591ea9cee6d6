// The partitions view's arithmetic, kept free of the DOM: where a range
// lies in the EPK space, rates between two reports, hot keys and splits.

// epkFraction maps an effective partition key bound (hex; "" is the
// minimum, "FF" the maximum) to [0, 1].
export function epkFraction(epk) {
  if (!epk) return 0;
  if (epk.toUpperCase() === "FF") return 1;
  const hex = (epk + "0000000000000").slice(0, 13);
  const v = parseInt(hex, 16);
  return Number.isFinite(v) ? v / 16 ** 13 : 0;
}

// snapshot keeps what the next report's rates are computed against.
export function snapshot(report, t) {
  const byId = {};
  for (const p of report.partitions || []) {
    byId[p.id] = {
      chargedRU: p.chargedRU || 0,
      throttled: p.throttled || 0,
      keys: Object.fromEntries((p.topKeysByRU || []).map((k) => [k.key, k.weight])),
      keys429: Object.fromEntries((p.topKeysByThrottles || []).map((k) => [k.key, k.weight])),
    };
  }
  return { t, byId };
}

// HOT_SHARE is the share of a partition's request units in one interval
// from which its top key is hot, when the partition is also throttled or
// past half its throughput.
export const HOT_SHARE = 0.5;

// analyze returns, per partition id, the rates since prev (null on the
// first report or for a new partition) and the hot keys; plus the splits
// seen between prev and report.
export function analyze(report, prev, t) {
  const dt = prev ? Math.max((t - prev.t) / 1000, 0.001) : 0;
  const rows = [];
  const hot = [];
  for (const p of report.partitions || []) {
    const before = prev && prev.byId[p.id];
    const row = { p, ruRate: null, throttleRate: null, keyRates: {}, hotKeys: new Set() };
    if (before) {
      row.ruRate = Math.max(0, ((p.chargedRU || 0) - before.chargedRU) / dt);
      row.throttleRate = Math.max(0, ((p.throttled || 0) - before.throttled) / dt);
      if (p.topKeysByRUNow && p.topKeysByRUNow.length) {
        // The server's shares of what each key took lately: a key that
        // turns hot after others were busy long ago is not in the totals'
        // top yet.
        for (const k of p.topKeysByRUNow) row.keyRates[k.key] = k.weight * row.ruRate;
      } else {
        for (const k of p.topKeysByRU || []) row.keyRates[k.key] = Math.max(0, (k.weight - (before.keys[k.key] || 0)) / dt);
      }
      const pressed = row.throttleRate > 0 || (p.ruPerSecond > 0 && row.ruRate >= p.ruPerSecond / 2);
      if (pressed && row.ruRate > 0) {
        for (const [key, rate] of Object.entries(row.keyRates)) {
          if (rate / row.ruRate >= HOT_SHARE) {
            row.hotKeys.add(key);
            hot.push({ partition: p.id, key, share: rate / row.ruRate, ruRate: rate, throttleRate: row.throttleRate });
          }
        }
      }
    }
    rows.push(row);
  }
  const splits = [];
  if (prev) {
    const now = new Set(rows.map((r) => r.p.id));
    const gone = Object.keys(prev.byId).filter((id) => !now.has(id));
    for (const id of gone) {
      const children = rows.filter((r) => (r.p.parents || []).includes(id) && !prev.byId[r.p.id]).map((r) => r.p.id);
      splits.push({ parent: id, children });
    }
  }
  return { rows, hot, splits };
}

// colour returns a CSS colour for x in [0, 1]: green (idle) to red (busy).
export function colour(x) {
  const v = Math.min(1, Math.max(0, x || 0));
  return `hsl(${Math.round(120 * (1 - v))} 70% ${Math.round(70 - 25 * v)}%)`;
}

// A minimal Cosmos DB REST client for the browser: every request is signed
// with the account key (master-key HMAC-SHA256 through WebCrypto), exactly
// as the SDKs sign theirs. The key never leaves this page's memory and
// sessionStorage; requests go only to this page's own origin.

export const API_VERSION = "2018-12-31";

// CosmosError is a response with an error status: status, substatus, the
// service's code and message, and the request charge if any.
export class CosmosError extends Error {
  constructor(status, sub, code, message, charge) {
    super(message);
    this.status = status;
    this.sub = sub;
    this.code = code;
    this.charge = charge;
  }
}

// NetworkError is a request that got no response at all: the server is
// stopped, restarting, or unreachable.
export class NetworkError extends Error {}

// resource returns the resource type and link a request path signs, as
// the server derives them (docs/cosmos-wire-protocol.md §2.2): segments
// decoded once; an odd count names a feed (type = last segment, link = the
// rest), an even count one resource (type = second to last, link = all);
// an offer's link is its lower-cased id alone.
export function resource(rawPath) {
  const p = rawPath.replace(/^\/+/, "").replace(/\/+$/, "");
  if (p === "") return ["", ""];
  const segs = p.split("/").map(decodeURIComponent);
  const n = segs.length;
  if (n % 2 === 1) return [segs[n - 1], segs.slice(0, n - 1).join("/")];
  if (n === 2 && segs[0] === "offers") return ["offers", segs[1].toLowerCase()];
  return [segs[n - 2], segs.join("/")];
}

// parseJSON parses JSON text without losing what JavaScript's numbers
// cannot hold: a number whose text a double does not give back (an
// integer past 2^53, a decimal of more digits than a double keeps, 1.0 or
// 1e2 as written) is kept as its text (JSON.rawJSON), which JSON.stringify
// writes back as it came. Items are shown, edited and saved through it, so
// that opening and saving one changes nothing the user did not change: it
// rewrote 9007199254740993 as 9007199254740992 (an explorer hunt). On a
// browser without JSON.rawJSON (before Chrome 114, Firefox 135) it is
// JSON.parse.
export function parseJSON(text) {
  if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
  return JSON.parse(text, (key, value, context) => {
    if (typeof value === "number" && context && typeof context.source === "string" && context.source !== String(value)) {
      return JSON.rawJSON(context.source);
    }
    return value;
  });
}

// isRawNumber reports whether v is a number parseJSON kept as its text.
export function isRawNumber(v) {
  return typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v);
}

// plainValue returns v with a number kept as its text (parseJSON) turned
// back into a number, for code that compares or hashes values.
export function plainValue(v) {
  return isRawNumber(v) ? JSON.parse(v.rawJSON) : v;
}

// path joins URL path segments, percent-encoding each one.
export function path(...segs) {
  return "/" + segs.map((s) => encodeURIComponent(s)).join("/");
}

function base64ToBytes(b64) {
  const bin = atob(b64.trim());
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(buf) {
  let s = "";
  for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
  return btoa(s);
}

// importKey returns the WebCrypto HMAC key of a base64 account key; it
// throws a readable Error when the key is not base64 or WebCrypto is not
// available (a page served over plain HTTP from a non-loopback address).
export async function importKey(b64) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new Error("This browser offers no WebCrypto here: open the explorer over HTTPS (or on localhost) to sign in.");
  }
  let raw;
  try {
    raw = base64ToBytes(b64);
  } catch {
    throw new Error("The key is not valid base64: paste the account key exactly as the server was given it.");
  }
  if (raw.length === 0) throw new Error("Enter the account key.");
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

// sign returns the Authorization header value of one request.
export async function sign(cryptoKey, verb, rawPath, date) {
  const [type, link] = resource(rawPath);
  const payload = `${verb.toLowerCase()}\n${type.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
  const sig = await crypto.subtle.sign("HMAC", cryptoKey, new TextEncoder().encode(payload));
  return encodeURIComponent(`type=master&ver=1.0&sig=${bytesToBase64(sig)}`);
}

// Client sends signed requests to this page's origin.
export class Client {
  // cryptoKey: from importKey. onActivity is called after every response
  // (to extend the session), onUnauthorized after every 401.
  // beforeRequest may throw to refuse a request (an expired session).
  constructor(cryptoKey, { onActivity = () => {}, onUnauthorized = () => {}, beforeRequest = () => {}, timeoutMs = 30000 } = {}) {
    this.key = cryptoKey;
    this.beforeRequest = beforeRequest;
    this.onActivity = onActivity;
    this.onUnauthorized = onUnauthorized;
    this.timeoutMs = timeoutMs;
  }

  // request sends one request. body: an object (sent as JSON), a string,
  // or undefined. It returns {status, headers, body (parsed JSON or null),
  // charge}; it throws CosmosError for an error status and NetworkError
  // when no response came.
  async request(method, rawPath, { headers = {}, body } = {}) {
    this.beforeRequest();
    const date = new Date().toUTCString();
    const h = new Headers({
      "x-ms-date": date,
      "x-ms-version": API_VERSION,
      Accept: "application/json",
      authorization: await sign(this.key, method, rawPath, date),
    });
    let payload;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      h.set("Content-Type", "application/json");
    }
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    let resp;
    try {
      resp = await fetch(rawPath, { method, headers: h, body: payload, cache: "no-store", signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (e) {
      throw new NetworkError(`Cannot reach the server (${e.name === "TimeoutError" ? "no answer in time" : "connection failed"}): it may be stopped or restarting.`);
    }
    const text = await resp.text();
    let json = null;
    if (text) {
      try {
        json = parseJSON(text);
      } catch {
        json = null;
      }
    }
    const charge = Number(resp.headers.get("x-ms-request-charge") || 0);
    if (!resp.ok && resp.status !== 304) {
      const msg = (json && json.message) || text || resp.statusText || "error";
      const err = new CosmosError(resp.status, Number(resp.headers.get("x-ms-substatus") || 0), (json && json.code) || "", msg, charge);
      if (resp.status === 401) this.onUnauthorized(err);
      throw err;
    }
    this.onActivity();
    return { status: resp.status, headers: resp.headers, body: json, charge };
  }

  get(p, headers) {
    return this.request("GET", p, { headers });
  }

  // getAll reads every page of a feed (/dbs, …/colls, …/sprocs) and
  // returns the resources listed under key: a feed answers 100 at a time,
  // and the explorer listed only the first 100 containers, databases and
  // scripts (an explorer hunt).
  async getAll(p, key) {
    const all = [];
    let continuation = null;
    for (let page = 0; page < 10000; page++) {
      const headers = continuation ? { "x-ms-continuation": continuation } : {};
      const r = await this.get(p, headers);
      all.push(...((r.body && r.body[key]) || []));
      continuation = r.headers.get("x-ms-continuation");
      if (!continuation) break;
    }
    return all;
  }

  // query runs one page of a SQL query against a feed (…/docs, /dbs, …).
  async query(feed, query, parameters = [], headers = {}) {
    return this.request("POST", feed, {
      body: JSON.stringify({ query, parameters }),
      headers: {
        "Content-Type": "application/query+json",
        "x-ms-documentdb-isquery": "True",
        "x-ms-documentdb-query-enablecrosspartition": "True",
        // The explorer merges nothing itself: the server runs a
        // cross-partition ORDER BY, aggregate, DISTINCT or GROUP BY whole
        // (an extension), where Cosmos DB's gateway would refuse it.
        "x-partita-gateway-query": "full",
        ...headers,
      },
    });
  }
}

// partitionKeyOf returns the partition key header value ([…] JSON) of an
// item under a container's partition key definition; a missing value is
// the Undefined component {}.
export function partitionKeyOf(item, pkDef) {
  const vals = (pkDef && pkDef.paths ? pkDef.paths : []).map((p) => {
    let v = item;
    for (const part of p.split("/").slice(1)) {
      if (v === null || typeof v !== "object" || Array.isArray(v) || !(part in v)) return {};
      v = plainValue(v[part]);
    }
    return v === null || typeof v !== "object" ? v : {};
  });
  return JSON.stringify(vals);
}

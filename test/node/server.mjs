// Shared helpers for the SDK conformance tests: start a Partita server on a
// free loopback port with a temporary data directory, build a CosmosClient
// that trusts the certificate the server generated (verification stays on),
// and stop the server and remove its data afterwards.
//
// The binary comes from $PARTITA_BIN. With PARTITA_CLUSTER=1, startPartita
// starts a three-node cluster (docs/cluster.md) instead and the tests talk
// to its node 1 (make test-node-cluster).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import { CosmosClient } from "@azure/cosmos";

export const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
export const READY_MARKER = "is serving the Cosmos DB API at https://";
const READY_TIMEOUT_MS = 20_000;
// A cluster member is ready once a majority of the join list is up and it
// has joined etcd, which takes longer on a loaded machine.
const CLUSTER_READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/** Reports whether the tests run against node 1 of a three-node cluster (PARTITA_CLUSTER=1). */
export const CLUSTER = process.env.PARTITA_CLUSTER === "1";

/** Returns a loopback port that was free a moment ago. */
export function freePort() {
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
 * spawnOptions: env (the process's environment; default this one's) and
 * readyTimeoutMs (default 20 s).
 */
export function startServer(bin, port, dataDir, extraArgs = ["--rate-limit=off"], spawnOptions = {}) {
  const timeoutMs = spawnOptions.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const proc = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, "--data", dataDir, ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
    env: spawnOptions.env ?? process.env,
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
      () => finish(new Error(`partita did not print its ready line within ${timeoutMs} ms`)),
      timeoutMs,
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
export function stopServer(proc) {
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

/**
 * Starts $PARTITA_BIN on a free port with a fresh temporary data directory and
 * returns {endpoint, client, server, dataDir, stop}. stop() disposes of the
 * client, stops the server and deletes the data directory; it is safe to call
 * once whatever state the start reached. If the start fails, everything it
 * created is cleaned up before the error is thrown. options.serverArgs are
 * extra `serve` flags (default: --rate-limit=off, for tests not about
 * throttling).
 */
export async function startPartita(options = {}) {
  const bin = process.env.PARTITA_BIN;
  if (!bin) {
    throw new Error(
      "PARTITA_BIN is not set: build the server (go build -o /tmp/partita ./cmd/partita) " +
        "and run PARTITA_BIN=/tmp/partita node --test",
    );
  }
  if (CLUSTER) return startCluster(bin, options);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "partita-node-"));
  const env = { dataDir, server: undefined, client: undefined, endpoint: undefined };
  env.stop = async () => {
    env.client?.dispose();
    if (env.server) await stopServer(env.server.proc);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    env.endpoint = `https://127.0.0.1:${port}/`;
    env.server = await startServer(bin, port, dataDir, options.serverArgs ?? ["--rate-limit=off"]);
    assert.ok(
      env.server.output.stdout.includes(`${READY_MARKER}127.0.0.1:${port}/`),
      `ready line does not name ${env.endpoint}:\n${env.server.output.stdout}`,
    );
    env.client = makeClient(env);
  } catch (err) {
    await env.stop();
    throw err;
  }
  return env;
}

/**
 * startPartita with PARTITA_CLUSTER=1: starts three `bin serve` processes that
 * form one cluster (each with its own data directory, API port and cluster
 * port, the same --join list and a fresh PARTITA_CLUSTER_SECRET; options.serverArgs
 * go to every node) and waits for all three ready lines. It returns what
 * startPartita returns, for node 1 (endpoint, client, server, dataDir), plus
 * nodes: every node's {endpoint, dataDir, server}. stop() stops all three
 * (SIGTERM, one after the other) and removes every directory.
 */
async function startCluster(bin, options) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "partita-node-cluster-"));
  const nodes = [1, 2, 3].map((n) => ({ dataDir: path.join(root, `n${n}`), server: undefined }));
  const env = { dataDir: nodes[0].dataDir, server: undefined, client: undefined, endpoint: undefined, nodes };
  env.stop = async () => {
    env.client?.dispose();
    // One at a time: a member stopping while it leads etcd first hands its
    // leadership to another, which takes etcd's request timeout (7 s) when
    // that one is stopping too.
    for (const n of nodes.toReversed()) {
      if (n.server) await stopServer(n.server.proc);
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    const { api, cluster } = await stablePorts(nodes.length);
    const join = cluster.map((p) => `127.0.0.1:${p}`).join(",");
    const spawnOptions = {
      env: { ...process.env, PARTITA_CLUSTER_SECRET: crypto.randomBytes(16).toString("hex") },
      readyTimeoutMs: CLUSTER_READY_TIMEOUT_MS,
    };
    const args = options.serverArgs ?? ["--rate-limit=off"];
    // Every member must start at once: one is ready only when a majority is up.
    const started = await Promise.allSettled(
      nodes.map((n, i) => {
        n.endpoint = `https://127.0.0.1:${api[i]}/`;
        const clusterArgs = ["--cluster-addr", `127.0.0.1:${cluster[i]}`, "--join", join];
        return startServer(bin, api[i], n.dataDir, [...args, ...clusterArgs], spawnOptions).then((srv) => {
          n.server = srv;
        });
      }),
    );
    const failed = started.filter((r) => r.status === "rejected");
    if (failed.length > 0) throw new Error(failed.map((r) => r.reason.message).join("\n\n"));
    env.server = nodes[0].server;
    env.endpoint = nodes[0].endpoint;
    for (const n of nodes) {
      assert.ok(
        n.server.output.stdout.includes(`${READY_MARKER}${n.endpoint.replace("https://", "")}`),
        `ready line does not name ${n.endpoint}:\n${n.server.output.stdout}`,
      );
    }
    env.client = makeClient(env);
  } catch (err) {
    await env.stop();
    throw err;
  }
  return env;
}

/**
 * Chooses n API ports and n cluster ports whose port+1 (the etcd peer port)
 * is free too, all distinct, below the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range), so that no connection's local
 * port or ":0" listener can take one between the choice and the server's
 * bind, as cmd/partita/cluster_test.go does. Every port is held until all
 * are chosen.
 */
async function stablePorts(n) {
  let lo = 32768;
  try {
    const first = Number.parseInt(fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0], 10);
    if (first > 12000) lo = first;
  } catch {
    // Not Linux: keep the common default.
  }
  const held = [];
  const take = async (port) => {
    const srv = await listenOn(port);
    if (srv) held.push(srv);
    return srv !== null;
  };
  const api = [];
  const cluster = [];
  try {
    for (let tries = 0; api.length < n || cluster.length < n; tries++) {
      if (tries === 100 * n) throw new Error("no free loopback ports below the ephemeral range");
      const port = 10000 + Math.floor(Math.random() * (lo - 10000 - 1));
      if (cluster.length < n) {
        if ((await take(port)) && (await take(port + 1))) cluster.push(port);
      } else if (await take(port)) {
        api.push(port);
      }
    }
  } finally {
    await Promise.all(held.map((srv) => new Promise((resolve) => srv.close(resolve))));
  }
  return { api, cluster };
}

/** Listens on 127.0.0.1:port; resolves with the server, or null if the port is taken. */
function listenOn(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(null));
    srv.listen(port, "127.0.0.1", () => resolve(srv));
  });
}

/**
 * Returns a new client for a started server (startPartita's env), trusting
 * its certificate; extra is merged into the CosmosClient options (e.g.
 * connectionPolicy.retryOptions). The caller disposes of it.
 */
export function makeClient(env, extra = {}) {
  const ca = fs.readFileSync(path.join(env.dataDir, "tls", "cert.pem"));
  return new CosmosClient({ endpoint: env.endpoint, key: EMULATOR_KEY, agent: new https.Agent({ ca }), ...extra });
}

/** Runs fn, which must throw a Cosmos error; returns that error's status code. */
export async function statusOfFailure(fn) {
  try {
    await fn();
  } catch (err) {
    assert.equal(typeof err.code, "number", `expected a Cosmos error with a numeric code, got ${err}`);
    return err.code;
  }
  assert.fail("expected the operation to fail, but it succeeded");
}

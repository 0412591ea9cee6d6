// Shared helpers for the SDK conformance tests: start a Partita server on a
// free loopback port with a temporary data directory, build a CosmosClient
// that trusts the certificate the server generated (verification stays on),
// and stop the server and remove its data afterwards.
//
// The binary comes from $PARTITA_BIN.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
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
const STOP_TIMEOUT_MS = 10_000;

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
 */
export function startServer(bin, port, dataDir, extraArgs = ["--rate-limit=off"]) {
  const proc = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, "--data", dataDir, ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
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
      () => finish(new Error(`partita did not print its ready line within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
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

// Firefox smoke test of the Data Explorer (/_explorer/): the Go browser test
// (internal/explorer/browser_test.go) drives the page in Chromium; this one
// drives it in headless Firefox over WebDriver BiDi with puppeteer-core
// (pinned in package.json; it never downloads a browser), against a real
// server started by server.mjs. In the page it signs in with the emulator's
// key (the page's own button), creates a database, a container and an item,
// runs a query and reads its charge, and checks that no uncaught page error
// occurred and the page's error banner stayed hidden.
//
// Run: PARTITA_BIN=/path/to/partita node --test explorer-firefox.test.mjs
//
// Firefox is $PARTITA_FIREFOX or the first of firefox-esr, firefox on $PATH;
// without one the test is skipped with a message saying so. The screenshot
// goes to $PARTITA_SCREENSHOTS when set; otherwise to a temporary directory
// removed after a pass and kept (its path printed) after a failure.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { startPartita } from "./server.mjs";

const STEP_TIMEOUT_MS = 30_000; // any one wait in the page
const LAUNCH_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 10_000;

/** $PARTITA_FIREFOX, or the first Firefox on $PATH; "" when there is none. */
function firefox() {
  if (process.env.PARTITA_FIREFOX) return process.env.PARTITA_FIREFOX;
  for (const name of ["firefox-esr", "firefox"]) {
    try {
      const p = execFileSync("which", [name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
      if (p) return p;
    } catch {
      // not on $PATH
    }
  }
  return "";
}

/** puppeteer-core's module, or null when `npm ci` has not installed it. */
async function loadPuppeteer() {
  try {
    return (await import("puppeteer-core")).default;
  } catch (err) {
    if (err?.code === "ERR_MODULE_NOT_FOUND") return null;
    throw err;
  }
}

const bin = firefox();
const puppeteer = await loadPuppeteer();
const skip = !bin
  ? "no Firefox found (install Debian's firefox-esr package or set PARTITA_FIREFOX): skipping the Data Explorer's Firefox test"
  : !puppeteer
    ? "puppeteer-core is not installed (run npm ci in test/node): skipping the Data Explorer's Firefox test"
    : false;

describe("Data Explorer in Firefox", { skip }, () => {
  let env; // from startPartita
  let browser;
  let page;
  let shotDir;
  let keepShots = Boolean(process.env.PARTITA_SCREENSHOTS);
  const pageErrors = [];
  const consoleErrors = [];

  before(async () => {
    env = await startPartita({ serverArgs: ["--rate-limit=on"] });
    if (process.env.PARTITA_SCREENSHOTS) {
      shotDir = process.env.PARTITA_SCREENSHOTS;
      fs.mkdirSync(shotDir, { recursive: true });
    } else {
      shotDir = fs.mkdtempSync(path.join(os.tmpdir(), "partita-firefox-"));
    }
    browser = await puppeteer.launch({
      browser: "firefox",
      executablePath: bin,
      headless: true,
      acceptInsecureCerts: true, // the server's certificate is self-signed
      defaultViewport: { width: 1280, height: 800 },
      timeout: LAUNCH_TIMEOUT_MS,
      protocolTimeout: LAUNCH_TIMEOUT_MS,
    });
    page = await browser.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    page.on("pageerror", (err) => pageErrors.push(String(err?.stack || err)));
    page.on("console", (msg) => {
      if (msg.type() === "error") consoleErrors.push(msg.text());
    });
  });

  after(async () => {
    if (browser) {
      const proc = browser.process();
      let timer;
      await Promise.race([
        browser.close().catch(() => {}),
        new Promise((resolve) => {
          timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    }
    await env?.stop();
    if (shotDir && !keepShots) fs.rmSync(shotDir, { recursive: true, force: true });
  });

  /** What the page shows in its banner and error messages, for failures. */
  async function pageState() {
    try {
      return await page.evaluate(() =>
        JSON.stringify({
          banner: document.getElementById("banner")?.textContent ?? "",
          errors: [...document.querySelectorAll(".error")].map((e) => e.textContent).filter(Boolean),
        }),
      );
    } catch (err) {
      return `(page state unavailable: ${err.message})`;
    }
  }

  /** Waits until an element matching sel contains want. */
  async function waitText(what, sel, want) {
    try {
      await page.waitForFunction(
        (sel, want) => [...document.querySelectorAll(sel)].some((e) => e.textContent.includes(want)),
        { timeout: STEP_TIMEOUT_MS, polling: 100 },
        sel,
        want,
      );
    } catch (err) {
      throw new Error(`${what}: no ${sel} containing ${JSON.stringify(want)}: ${err.message}; page: ${await pageState()}`);
    }
  }

  /** Clears a form control and types value into it, as a user would. */
  async function fill(sel, value) {
    await page.waitForSelector(sel, { visible: true });
    await page.$eval(sel, (e) => {
      e.value = "";
      e.focus();
    });
    await page.type(sel, value);
  }

  async function screenshot(name) {
    const p = path.join(shotDir, name);
    await page.screenshot({ path: p });
    return p;
  }

  it("signs in, creates a database, container and item, runs a query", { timeout: 180_000 }, async () => {
    try {
      await page.goto(`${env.endpoint}_explorer/`, { waitUntil: "load" });
      await page.waitForSelector("#key", { visible: true });
      await page.click("#use-emulator-key");
      await page.click("#signin-button");
      await page.waitForSelector("#tree-body", { visible: true });
      await waitText("signed in", "#access", "read-write key");

      await page.click("#new-db summary");
      await fill("#new-db-id", "shop");
      await page.click("#new-db-form button[type=submit]");
      await waitText("database listed", ".db-name", "shop");

      await page.click("details.new-coll summary");
      await fill("input[data-field=container-id]", "orders");
      await fill("input[data-field=partition-key]", "/customerId");
      await page.click("details.new-coll button[type=submit]");
      await waitText("container opened", ".coll-title", "shop / orders");

      await page.click("#item-new");
      await fill("#item-json", '{"id": "o1", "customerId": "c42", "total": 12.5}');
      await page.click("#item-save");
      await waitText("item created", "#item-result", "Created o1");

      // The item is stored: read it back through the API, not the page.
      const { resource: item } = await env.client.database("shop").container("orders").item("o1", "c42").read();
      assert.equal(item?.total, 12.5, `item read through the API: ${JSON.stringify(item)}`);

      await page.click("#tab-query");
      await fill("#query-text", "SELECT c.id, c.total FROM c WHERE c.total > 10");
      await page.click("#query-run");
      await waitText("query results", "#query-json", '"o1"');
      const charge = Number(await page.$eval("#query-charge", (e) => e.textContent));
      assert.ok(charge > 0, `query charge shown = ${charge}, want a positive number of RU`);

      const shot = await screenshot("explorer-firefox.png");
      console.log(`screenshot: ${shot}`);

      const banner = await page.$eval("#banner", (e) => ({ hidden: e.hidden, text: e.textContent }));
      assert.ok(banner.hidden, `the page's error banner is shown: ${JSON.stringify(banner.text)}`);
      assert.deepEqual(pageErrors, [], "uncaught errors in the page");
      if (consoleErrors.length > 0) console.log(`console errors (not failures): ${JSON.stringify(consoleErrors)}`);
    } catch (err) {
      keepShots = true;
      try {
        console.log(`failure screenshot: ${await screenshot("explorer-firefox-failure.png")}`);
      } catch {
        // the page may be gone
      }
      if (pageErrors.length > 0) err.message += `\nuncaught page errors: ${JSON.stringify(pageErrors)}`;
      throw err;
    }
  });
});

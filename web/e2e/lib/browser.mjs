// Launches Debian's Chromium through playwright-core (Playwright's own
// browser download does not work on these machines) with the flags a closed
// network needs, and records every console error and page error so a test
// can fail on them.

import { chromium } from "playwright-core";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { startGateway } from "./gateway.mjs";

/** Where screenshots are kept: $TOOLGATE_ARTIFACTS or <repo>/test-artifacts. */
export const artifactsDir = process.env.TOOLGATE_ARTIFACTS ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../test-artifacts");

/** The Chromium binary: $CHROMIUM_BIN or /usr/bin/chromium. */
export function chromiumBinary() {
  const path = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
  if (!existsSync(path)) throw new Error(`Chromium not found at ${path} (apt-get install -y chromium, or set CHROMIUM_BIN)`);
  return path;
}

/**
 * Starts headless Chromium. Playwright gives every launch a fresh, empty
 * profile directory. `extraArgs` are added to the command line (e.g. to trust
 * a test's own certificate).
 */
export function launchBrowser(extraArgs = []) {
  return chromium.launch({
    executablePath: chromiumBinary(),
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...extraArgs,
    ],
  });
}

/**
 * Watches a page for console errors and uncaught exceptions.
 * `problems` lists them as strings; `allow(re)` tolerates messages matching re.
 */
export function watchConsole(page) {
  const problems = [];
  const allowed = [];
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const text = `console.error: ${msg.text()} (${msg.location()?.url ?? ""})`;
    if (!allowed.some((re) => re.test(text))) problems.push(text);
  });
  page.on("pageerror", (err) => problems.push(`uncaught: ${err.stack ?? err.message}`));
  return {
    problems,
    allow(re) {
      allowed.push(re);
    },
  };
}

/** Saves a full-page screenshot as test-artifacts/<name>.png and returns its path. */
export async function keepScreenshot(page, name) {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  // From the top, so the sticky header is drawn where it belongs.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Registers the hooks every page test file shares: one gateway and one
 * browser for the file, a fresh context and page per test whose console is
 * watched, and a failure of the test when the page logged an error. set is
 * called before each test with { gw, page, consoleWatch }.
 */
export function pageFixture(contextOptions, set) {
  let gw;
  let browser;
  let context;
  let consoleWatch;
  before(async () => {
    gw = await startGateway();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });
  beforeEach(async () => {
    context = await browser.newContext(contextOptions);
    const page = await context.newPage();
    consoleWatch = watchConsole(page);
    set({ gw, page, consoleWatch });
  });
  afterEach(async () => {
    const problems = [...consoleWatch.problems];
    await context.close();
    assert.deepEqual(problems, [], "the page logged errors");
  });
}

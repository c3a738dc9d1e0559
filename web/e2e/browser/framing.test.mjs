// A page on another site frames the gateway's page (the operator console),
// as a clickjacking page would: the gateway's Content-Security-Policy
// (frame-ancestors 'none') and X-Frame-Options make Chromium refuse to show
// it, while the same page still loads on its own.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startGateway } from "../lib/gateway.mjs";
import { freePort } from "../lib/nginx.mjs";
import { launchBrowser } from "../lib/browser.mjs";

let gw;
let site;
let siteUrl;
let browser;

before(async () => {
  const port = await freePort();
  siteUrl = `http://127.0.0.1:${port}`;
  gw = await startGateway();
  site = createServer((req, res) => {
    if (req.url !== "/") {
      res.writeHead(404).end();
      return;
    }
    res
      .writeHead(200, { "Content-Type": "text/html; charset=utf-8" })
      .end(`<!doctype html><title>framer</title><iframe id="victim" src="${gw.url}/#agent_key=${encodeURIComponent(gw.agentKey)}"></iframe>`);
  });
  await new Promise((resolve) => site.listen(port, "127.0.0.1", resolve));
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  await gw?.stop();
});

test("a page on another origin cannot frame the console", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const refusals = [];
  page.on("console", (msg) => {
    if (/frame-ancestors|X-Frame-Options/i.test(msg.text())) refusals.push(msg.text());
  });
  await page.goto(`${siteUrl}/`, { waitUntil: "load" });
  const frame = page.frames().find((f) => f !== page.mainFrame());
  assert.ok(frame, "the iframe has no frame");
  // A refused frame shows Chromium's error page, not the gateway's.
  const shown = await frame.evaluate(() => document.querySelector('[data-testid="conn-state"]') !== null).catch(() => false);
  assert.equal(shown, false, `the console was shown inside another site's frame (${frame.url()})`);
  assert.ok(refusals.length > 0, "Chromium logged no refusal of the frame");

  // The same page on its own loads (the policy lets the gateway's own scripts run).
  const own = await context.newPage();
  await own.goto(`${gw.url}/`);
  await own.waitForSelector('[data-testid="conn-state"][data-state="connected"]', { timeout: 15000 });
  await context.close();
});

// End-to-end tests of many tabs in one headless Chromium profile: the tabs of
// an origin share one long-lived request (the leader tab's POST /v1/streams,
// or POST /v1/poll behind a buffering proxy), so 20 tabs of the gateway's page
// over plain HTTP/1.1 — where a browser opens at most 6 connections to a
// host — each answer their own calls; closing the oldest tabs (the leader
// among them) and freezing the leader hand the connection to another tab;
// behind a buffering nginx every tab falls back to the poll and answers; over
// HTTPS (HTTP/2, a certificate the test makes) 20 tabs answer too.
// Every test fails on a console error in any tab.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway } from "../lib/gateway.mjs";
import { startBufferingProxy } from "../lib/nginx.mjs";
import { launchBrowser, watchConsole } from "../lib/browser.mjs";

let gw;
let browser;

before(async () => {
  gw = await startGateway();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await gw?.stop();
});

/**
 * Records the requests of every page of a context that hold a connection
 * for events: which page sent each, and when.
 */
function watchEventRequests(context) {
  const seen = [];
  context.on("request", (request) => {
    const path = new URL(request.url()).pathname;
    if (path === "/v1/streams" || path === "/v1/poll" || /^\/v1\/sessions\/[^/]+\/(events|poll)$/.test(path)) {
      seen.push({ path, method: request.method(), page: request.frame()?.page(), at: Date.now() });
    }
  });
  return seen;
}

/**
 * Opens `count` tabs of `url` in `context` — the first alone (so it leads),
 * the others a few at a time — and waits until each page's client is
 * connected with `transport`; returns the tabs, oldest first, as
 * {page, watch, sessionId}.
 */
async function openTabs(context, url, count, transport) {
  const open = async () => {
    const page = await context.newPage();
    const watch = watchConsole(page);
    await page.goto(url);
    return { page, watch };
  };
  const tabs = [await open()];
  await connected(tabs[0], transport);
  while (tabs.length < count) {
    tabs.push(...(await Promise.all(Array.from({ length: Math.min(5, count - tabs.length) }, open))));
  }
  await Promise.all(tabs.map((tab) => connected(tab, transport)));
  return tabs;
}

/** Waits until the tab's client is connected with `transport`; sets and returns tab.sessionId. */
async function connected(tab, transport, timeout = 20000) {
  await tab.page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout });
  await tab.page.waitForSelector(`[data-testid="transport"][data-transport="${transport}"]`, { timeout });
  tab.sessionId = await tab.page.evaluate(() => globalThis.toolgateClient.sessionId);
  return tab.sessionId;
}

/** Calls page_info in every tab at once (through `gateway`); asserts each tab answered its own, from its own page. */
async function everyTabAnswers(tabs, baseUrl, gateway = gw) {
  const timeoutMs = 15000;
  const records = await Promise.all(tabs.map((tab) => gateway.call(tab.sessionId, "page_info", {}, { timeout_ms: timeoutMs })));
  for (const [i, record] of records.entries()) {
    assert.equal(record.status, "completed", `tab ${i}: ${JSON.stringify(record)}`);
    assert.equal(record.output.url, `${baseUrl}/`);
  }
  await Promise.all(
    tabs.map((tab, i) =>
      tab.page.locator(`[data-testid="call-log"] [data-call-id="${records[i].id}"] [data-role="status"]`).filter({ hasText: /^answered$/ }).waitFor({ timeout: 5000 }),
    ),
  );
  return records;
}

function noProblems(tabs) {
  const problems = tabs.flatMap((tab, i) => tab.watch.problems.map((p) => `tab ${i}: ${p}`));
  assert.deepEqual(problems, [], "the pages logged errors");
}

/** The pages that opened a multi-session stream since `since` (ms). */
function streamOpeners(requests, since = 0) {
  return [...new Set(requests.filter((r) => r.path === "/v1/streams" && r.method === "POST" && r.at >= since).map((r) => r.page))];
}

// --- 20 tabs over plain HTTP/1.1, then the oldest closed, then the leader frozen ---

let context;
let tabs;
let requests;

test("20 tabs over plain HTTP/1.1: 20 sessions on one stream, and every tab answers its own page_info", async () => {
  context = await browser.newContext({ viewport: { width: 800, height: 600 } });
  requests = watchEventRequests(context);
  const started = Date.now();
  tabs = await openTabs(context, `${gw.url}/`, 20, "sse");
  console.log(`# 20 tabs connected in ${Date.now() - started} ms`);

  assert.equal(new Set(tabs.map((t) => t.sessionId)).size, 20, "20 sessions");
  assert.equal(streamOpeners(requests).length, 1, "one tab opened the stream");
  assert.deepEqual(
    requests.filter((r) => r.path !== "/v1/streams"),
    [],
    "no tab opened a stream or a poll of its own",
  );
  await everyTabAnswers(tabs, gw.url);
  noProblems(tabs);
});

test("the 4 oldest tabs closed, the leader among them: every remaining tab keeps answering", async () => {
  assert.ok(tabs, "the 20 tabs are open");
  const [leader] = streamOpeners(requests);
  const oldest = tabs.slice(0, 4);
  assert.ok(
    oldest.some((t) => t.page === leader),
    "the tab that leads is one of the 4 oldest",
  );
  const closedAt = Date.now();
  await Promise.all(oldest.map((t) => t.page.close()));
  noProblems(oldest);
  tabs = tabs.slice(4);

  const records = await everyTabAnswers(tabs, gw.url);
  const answeredMs = Date.now() - closedAt;
  const [next] = streamOpeners(requests, closedAt);
  assert.ok(next && tabs.some((t) => t.page === next), "a remaining tab opened the new stream");
  const tookOverMs = requests.find((r) => r.page === next && r.at >= closedAt).at - closedAt;
  console.log(`# after the close, a new stream was opened in ${tookOverMs} ms; 16 calls answered ${answeredMs} ms after the close`);
  assert.ok(records.every((r) => r.attempts === 1), "each call was delivered once");
  noProblems(tabs);
});

test("the leading tab frozen: another takes over and every other tab answers; thawed, it answers too", async () => {
  assert.ok(tabs, "the 16 tabs are open");
  const leader = requests.filter((r) => r.path === "/v1/streams").at(-1).page;
  const frozen = tabs.find((t) => t.page === leader);
  assert.ok(frozen, "the leader is one of the open tabs");
  // Headless Chromium shows every page, and the DevTools protocol freezes only
  // hidden ones, so the page is told it freezes as a browser tells it
  // (the Page Lifecycle API's "freeze" event) and keeps running. The steal
  // from a leader that truly went silent is in sdk/tabs.test.mjs.
  const frozenAt = Date.now();
  await frozen.page.evaluate(() => dispatchEvent(new Event("freeze")));
  const others = tabs.filter((t) => t !== frozen);
  await everyTabAnswers(others, gw.url);
  const [next] = streamOpeners(requests, frozenAt);
  assert.ok(next && next !== leader, "another tab opened a stream");
  const tookOverMs = requests.find((r) => r.page === next && r.at >= frozenAt).at - frozenAt;
  console.log(`# after the leader froze, a new stream was opened in ${tookOverMs} ms; 15 calls answered ${Date.now() - frozenAt} ms after the freeze`);

  // Thawed ("resume"), the old leader's page is a follower like the others, and answers too.
  await frozen.page.evaluate(() => dispatchEvent(new Event("resume")));
  await everyTabAnswers([frozen], gw.url);
  assert.deepEqual(streamOpeners(requests, frozenAt), [next], "the thawed page did not take the lead back");
  noProblems(tabs);
  await context.close();
});

// --- behind a buffering proxy --------------------------------------------------------

test("8 tabs behind a buffering nginx: all fall back to the poll and all answer", async () => {
  const proxy = await startBufferingProxy(gw.hostPort);
  const proxied = await browser.newContext({ viewport: { width: 800, height: 600 } });
  try {
    const seen = watchEventRequests(proxied);
    const started = Date.now();
    const eight = await openTabs(proxied, `${proxy.url}/`, 8, "poll");
    console.log(`# 8 tabs behind nginx polling in ${Date.now() - started} ms`);
    assert.equal(new Set(eight.map((t) => t.sessionId)).size, 8, "8 sessions");
    assert.ok(seen.some((r) => r.path === "/v1/poll"), "the leader polls");
    assert.deepEqual(seen.filter((r) => r.path.startsWith("/v1/sessions/")), [], "no tab has a connection of its own");
    await everyTabAnswers(eight, proxy.url);
    // Leave the pages before the proxy goes: a poll through a stopped proxy
    // would be refused, and Chromium logs that as a console error.
    await Promise.all(eight.map((t) => t.page.goto("about:blank")));
    noProblems(eight);
  } finally {
    await proxied.close();
    await proxy.stop();
  }
});

// --- over HTTPS, HTTP/2 ----------------------------------------------------------------

/** A self-signed certificate for 127.0.0.1, made with openssl in a temp dir; returns the two files. */
function makeCertificate() {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-tls-"));
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
  ], { stdio: "ignore" });
  return { cert, key };
}

test("20 tabs over HTTPS with HTTP/2: 20 sessions, and every tab answers its own page_info", async () => {
  const { cert, key } = makeCertificate();
  const tls = await startGateway({ args: ["--tls-cert", cert, "--tls-key", key] });
  // The test's own calls (Node's fetch) trust the certificate the same way the browser context does.
  const rejectUnauthorized = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
  const secure = await browser.newContext({ viewport: { width: 800, height: 600 }, ignoreHTTPSErrors: true });
  try {
    assert.match(tls.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const seen = watchEventRequests(secure);
    const started = Date.now();
    const twenty = await openTabs(secure, `${tls.url}/`, 20, "sse");
    console.log(`# 20 tabs over HTTPS connected in ${Date.now() - started} ms`);
    const protocols = await Promise.all(twenty.map((t) => t.page.evaluate(() => performance.getEntriesByType("navigation")[0].nextHopProtocol)));
    assert.deepEqual([...new Set(protocols)], ["h2"], "every page came over HTTP/2");
    assert.equal(new Set(twenty.map((t) => t.sessionId)).size, 20, "20 sessions");
    assert.equal(streamOpeners(seen).length, 1, "one tab opened the stream");
    await everyTabAnswers(twenty, tls.url, tls);
    noProblems(twenty);
  } finally {
    await secure.close();
    await tls.stop();
    if (rejectUnauthorized === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = rejectUnauthorized;
  }
});

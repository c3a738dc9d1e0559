// End-to-end tests of sessions and tabs in headless Debian Chromium (one
// profile): two SDK clients in one page each own a session, also across a
// reload mid-call; a duplicated tab (its sessionStorage a copy of the first
// tab's) starts a session of its own instead of answering the first tab's
// calls; and the page's session metadata carries no fragment and no agent
// key. Every test fails on a console error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { pageFixture, watchConsole } from "../lib/browser.mjs";
import { until } from "../lib/wait.mjs";

let gw;
let page;
pageFixture({ viewport: { width: 1280, height: 900 } }, (f) => ({ gw, page } = f));

// Two parts of one app, each with a ToolgateClient made with default options
// and a tool of its own. A call with {hold: true} waits until the test lets
// it go (parts.<name>.release()). Served at the gateway's origin by a route
// of the browser context, so the SDK is the gateway's own /toolgate.js.
const TWO_PARTS_PATH = "/e2e/two-parts.html";
const TWO_PARTS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>two parts</title><link rel="icon" href="data:,"></head>
<body><script type="module">
import { ToolgateClient } from "/toolgate.js";
const documentId = crypto.randomUUID();
window.parts = {};
for (const part of ["alpha", "beta"]) {
  const client = new ToolgateClient();
  const held = [];
  client.registerTool({
    name: part + "_tool",
    description: "Answers for the " + part + " part of the page",
    parameters: { type: "object", properties: { hold: { type: "boolean" } }, additionalProperties: false },
    handler(args, { attempt }) {
      const answer = { part, document: documentId, attempt };
      if (!args.hold) return answer;
      return new Promise((resolve) => held.push(() => resolve(answer)));
    },
  });
  window.parts[part] = {
    client,
    connected: client.connect(),
    held: () => held.length,
    release: () => held.splice(0).forEach((go) => go()),
  };
}
</script></body></html>`;

/** Opens the two-parts page and waits until both clients are connected; returns their session ids. */
async function openTwoParts() {
  await page.context().route(`${gw.url}${TWO_PARTS_PATH}`, (route) =>
    route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: TWO_PARTS_PAGE }),
  );
  await page.goto(`${gw.url}${TWO_PARTS_PATH}`);
  return twoPartsSessions();
}

async function twoPartsSessions() {
  await page.waitForFunction(() => window.parts?.alpha && window.parts?.beta, null, { timeout: 10000 });
  return page.evaluate(async () => {
    await Promise.all([parts.alpha.connected, parts.beta.connected]);
    return { alpha: parts.alpha.client.sessionId, beta: parts.beta.client.sessionId };
  });
}

/** Opens the gateway's page in `tab` and waits until its client is connected; returns its session id. */
async function openGatewayPage(tab, url) {
  await tab.goto(url);
  await tab.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  return tab.evaluate(() => globalThis.toolgateClient.sessionId);
}

/** The call ids in the call log of the gateway's page in `tab`. */
function loggedCalls(tab) {
  return tab.evaluate(() => [...document.querySelectorAll('[data-testid="call-log"] [data-call-id]')].map((li) => li.dataset.callId));
}

test("two clients in one page with default options get a session each, and each answers its own tool", async () => {
  const ids = await openTwoParts();
  assert.ok(ids.alpha && ids.beta, JSON.stringify(ids));
  assert.notEqual(ids.alpha, ids.beta, "each client has a session of its own");
  assert.deepEqual((await gw.toolsOf(ids.alpha)).map((t) => t.name), ["alpha_tool"]);
  assert.deepEqual((await gw.toolsOf(ids.beta)).map((t) => t.name), ["beta_tool"]);

  for (const part of ["alpha", "beta"]) {
    const record = await gw.call(ids[part], `${part}_tool`, {}, { timeout_ms: 10000 });
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.equal(record.output.part, part);
  }

  // The keys: the first client's is the one earlier versions used, the next one's is ranked.
  const stored = await page.evaluate(() => Object.fromEntries(Object.keys(sessionStorage).map((k) => [k, JSON.parse(sessionStorage.getItem(k)).sessionId])));
  assert.deepEqual(stored, { [`toolgate:${gw.url}`]: ids.alpha, [`toolgate:${gw.url}:2`]: ids.beta });
});

test("a reload mid-call resumes each client's own session, and the open call is answered by the reloaded page", async () => {
  const before = await openTwoParts();
  const firstDocument = (await gw.call(before.alpha, "alpha_tool", {}, { timeout_ms: 10000 })).output.document;
  const pending = await gw.call(before.alpha, "alpha_tool", { hold: true }, { wait: false, timeout_ms: 30000 });
  await page.waitForFunction(() => parts.alpha.held() === 1, null, { timeout: 10000 });

  await page.reload();
  const after = await twoPartsSessions();
  assert.deepEqual(after, before, "each client resumed its own session");
  await page.waitForFunction(() => parts.alpha.held() === 1, null, { timeout: 10000 });
  await page.evaluate(() => parts.alpha.release());
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.equal(done.output.part, "alpha");
  assert.notEqual(done.output.document, firstDocument, "the reloaded page answered");
  assert.ok(done.output.attempt >= 2, `the call was delivered again after the reload (attempt ${done.output.attempt})`);

  const beta = await gw.call(before.beta, "beta_tool", {}, { timeout_ms: 10000 });
  assert.equal(beta.status, "completed", JSON.stringify(beta));
  assert.equal(beta.output.part, "beta");

  // A client closed and connected again at once keeps its session: its own
  // lock, let go a moment before, is not taken for another tab's.
  const again = await page.evaluate(async () => {
    parts.beta.client.close();
    await parts.beta.client.connect();
    return parts.beta.client.sessionId;
  });
  assert.equal(again, before.beta);
});

test("a duplicated tab starts a session of its own; it and the tab it came from each answer their own calls", async () => {
  const url = `${gw.url}/`;
  const firstId = await openGatewayPage(page, url);
  const copied = await page.evaluate(() => Object.fromEntries(Object.keys(sessionStorage).map((k) => [k, sessionStorage.getItem(k)])));
  assert.ok(
    Object.values(copied).some((v) => v.includes(firstId)),
    `the copied storage holds the first tab's session: ${Object.keys(copied)}`,
  );

  // A duplicate, as the browser makes it: the same storage before the page starts.
  const duplicate = await page.context().newPage();
  const duplicateWatch = watchConsole(duplicate);
  await duplicate.addInitScript((entries) => {
    if (sessionStorage.length === 0) for (const [k, v] of Object.entries(entries)) sessionStorage.setItem(k, v);
  }, copied);
  const started = Date.now();
  const duplicateId = await openGatewayPage(duplicate, url);
  const startMs = Date.now() - started;
  assert.notEqual(duplicateId, firstId, "the duplicate did not take up the first tab's session");

  for (const [tab, other, sessionId] of [
    [page, duplicate, firstId],
    [duplicate, page, duplicateId],
  ]) {
    const record = await gw.call(sessionId, "page_info", {}, { timeout_ms: 10000 });
    assert.equal(record.status, "completed", JSON.stringify(record));
    await until(async () => (await loggedCalls(tab)).includes(record.id), 5000, "the call in the answering tab's log");
    assert.ok(!(await loggedCalls(other)).includes(record.id), "the other tab did not see the call");
  }

  // Each tab keeps its own session across a reload.
  await duplicate.reload();
  await duplicate.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  assert.equal(await duplicate.evaluate(() => globalThis.toolgateClient.sessionId), duplicateId);
  assert.equal(await page.evaluate(() => globalThis.toolgateClient.sessionId), firstId);
  assert.deepEqual(duplicateWatch.problems, [], "the duplicate logged errors");
  console.log(`# the duplicate connected ${startMs} ms after it was opened`);
});

test("the page's session metadata holds neither the address's fragment nor the agent key", async () => {
  const secret = gw.agentKey;
  const sessionId = await openGatewayPage(page, `${gw.url}/?transport=sse#agent_key=${encodeURIComponent(secret)}`);
  const { status, body } = await gw.api("/v1/sessions");
  assert.equal(status, 200, JSON.stringify(body));
  const mine = body.sessions.find((s) => s.session_id === sessionId);
  assert.ok(mine, `the page's session is listed: ${JSON.stringify(body)}`);
  assert.equal(mine.metadata?.url, `${gw.url}/?transport=sse`);
  assert.ok(!JSON.stringify(body).includes(secret), "no agent key in any session");
  assert.ok(!JSON.stringify(mine.metadata).includes("#"), JSON.stringify(mine.metadata));

  // Nor does the page report it from page_info.
  const info = await gw.call(sessionId, "page_info", {}, { timeout_ms: 10000 });
  assert.equal(info.status, "completed", JSON.stringify(info));
  assert.equal(info.output.url, `${gw.url}/?transport=sse`);
});

// End-to-end tests of the gateway's page in headless Debian Chromium: the page
// registers its tools and answers calls, survives being closed and reopened
// (and reloaded mid-call) in the same tab, and falls back to long-poll behind
// a buffering nginx. Every test fails on a console error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBufferingProxy } from "../lib/nginx.mjs";
import { pageFixture, keepScreenshot } from "../lib/browser.mjs";

let gw;
let page;
let consoleWatch;
pageFixture({ viewport: { width: 1280, height: 900 }, locale: "en-US", timezoneId: "Europe/Paris" }, (f) => ({ gw, page, consoleWatch } = f));

/** Opens the page and waits until its client is connected; returns its session id. */
async function openPage(url, transport = "sse") {
  await page.goto(url);
  await page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  await page.waitForSelector(`[data-testid="transport"][data-transport="${transport}"]`, { timeout: 15000 });
  return page.evaluate(() => globalThis.toolgateClient.sessionId);
}

/** Waits until every tool the page registers shows "registered". */
async function toolsRegistered() {
  await page.waitForFunction(
    () => [...document.querySelectorAll('[data-testid="page-tools"] [data-role="registration"]')].every((c) => c.textContent === "registered"),
    null,
    { timeout: 10000 },
  );
}

/** The status chip text of a call in the page's call log. */
function callStatus(callId) {
  return page.locator(`[data-testid="call-log"] [data-call-id="${callId}"] [data-role="status"]`);
}

test("the page registers its tools and answers calls made through POST /v1/calls", async () => {
  const sessionId = await openPage(`${gw.url}/`);
  await toolsRegistered();
  const tools = await gw.toolsOf(sessionId);
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["ask_user", "get_location", "get_selection", "page_info"]);
  assert.ok(tools.every((t) => t.online && t.source.kind === "remote" && t.source.session_id === sessionId));
  assert.equal(await page.textContent('[data-testid="session-id"]'), sessionId.slice(-8));

  const info = await gw.call(sessionId, "page_info", {}, { timeout_ms: 10000 });
  assert.equal(info.status, "completed", JSON.stringify(info));
  assert.equal(info.output.title, "toolgate");
  assert.equal(info.output.url, `${gw.url}/`);
  assert.deepEqual(info.output.viewport, { width: 1280, height: 900, device_pixel_ratio: 1 });
  assert.equal(info.output.language, "en-US");
  assert.equal(info.output.time_zone, "Europe/Paris");
  await assert.doesNotReject(callStatus(info.id).filter({ hasText: /^answered$/ }).waitFor({ timeout: 5000 }));

  const asked = gw.call(sessionId, "ask_user", { question: "Which colour for the button?", choices: ["blue", "green"] }, { timeout_ms: 30000 });
  const question = page.locator('[data-testid="question"]');
  await question.waitFor({ timeout: 10000 });
  assert.equal(await question.locator('[data-role="text"]').textContent(), "Which colour for the button?");
  await question.locator('[data-testid="answer-input"]').fill("teal, please");
  await question.locator('[data-testid="answer-submit"]').click();
  const answered = await asked;
  assert.equal(answered.status, "completed", JSON.stringify(answered));
  assert.deepEqual(answered.output, { answer: "teal, please", answered_with: "text" });
  await question.waitFor({ state: "detached", timeout: 5000 });

  // Declining is a tool error with a code the agent can act on.
  const declined = gw.call(sessionId, "ask_user", { question: "May I?" }, { timeout_ms: 30000 });
  await page.locator('[data-testid="question"] [data-role="decline"]').click({ timeout: 10000 });
  const refusal = await declined;
  assert.equal(refusal.status, "failed");
  assert.equal(refusal.error.code, "PERMISSION_DENIED");

  await page.evaluate(() => {
    const range = document.createRange();
    range.selectNodeContents(document.querySelector("#client-title"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  });
  const selection = await gw.call(sessionId, "get_selection", {}, { timeout_ms: 10000 });
  assert.deepEqual(selection.output, { text: "This page is a tool client", length: 26 });
  assert.equal(await page.locator('[data-testid="call-log"] > li').count(), 4);
});

test("a call made while the page is closed is answered when it is opened again in the same tab", async () => {
  const url = `${gw.url}/`;
  const sessionId = await openPage(url);
  await toolsRegistered();
  await page.goto("about:blank"); // the page is gone; its tab (and sessionStorage) stays

  const pending = await gw.call(sessionId, "page_info", {}, { wait: false, timeout_ms: 30000 });
  assert.equal(pending.status, "pending");
  await new Promise((r) => setTimeout(r, 500));
  // Not answered: "pending", or "delivered" when the event went into the closing
  // connection before the gateway saw it close (the reopened page gets it again).
  const whileClosed = (await gw.api(`/v1/calls/${pending.id}`)).body.status;
  assert.ok(["pending", "delivered"].includes(whileClosed), `nobody answered while the page was closed (status ${whileClosed})`);

  const reopened = await openPage(url);
  assert.equal(reopened, sessionId, "the reopened page resumes its session");
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.equal(done.output.url, url);
  await callStatus(pending.id).filter({ hasText: /^answered$/ }).waitFor({ timeout: 5000 });

  // A question open when the page reloads is asked again after the reload.
  const asked = gw.call(sessionId, "ask_user", { question: "Still there?" }, { timeout_ms: 30000 });
  await page.locator('[data-testid="question"]').waitFor({ timeout: 10000 });
  await page.reload();
  await page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  assert.equal(await page.evaluate(() => globalThis.toolgateClient.sessionId), sessionId);
  const again = page.locator('[data-testid="question"]');
  await again.waitFor({ timeout: 10000 });
  assert.equal(await again.locator('[data-role="text"]').textContent(), "Still there?");
  await again.locator('[data-testid="answer-input"]').fill("yes");
  await again.locator('[data-testid="answer-input"]').press("Enter");
  const answer = await asked;
  assert.equal(answer.status, "completed", JSON.stringify(answer));
  assert.equal(answer.output.answer, "yes");
  assert.ok(answer.attempts >= 2, `the call was delivered again after the reload (attempts ${answer.attempts})`);
});

test("behind a buffering nginx the page falls back to long-poll and answers a call made through the proxy", async () => {
  const proxy = await startBufferingProxy(gw.hostPort);
  try {
    const started = Date.now();
    const sessionId = await openPage(`${proxy.url}/`, "poll");
    // The SDK waits sseReadyTimeoutMs (3000 ms by default) for the stream's "ready" before it polls.
    assert.ok(Date.now() - started >= 3000, "the page first waited for the stream to become ready");
    await toolsRegistered();
    assert.equal(await page.textContent('[data-testid="transport"]'), "long-poll");

    const res = await fetch(`${proxy.url}/v1/calls`, {
      method: "POST",
      headers: { Authorization: `Bearer ${gw.agentKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ session_id: sessionId, tool: "page_info", args: {}, timeout_ms: 20000 }),
    });
    const record = await res.json();
    assert.equal(res.status, 200, JSON.stringify(record));
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.equal(record.output.url, `${proxy.url}/`);
    await callStatus(record.id).filter({ hasText: /^answered$/ }).waitFor({ timeout: 5000 });
    await keepScreenshot(page, "page-behind-buffering-nginx");
  } finally {
    // Leave the page before the proxy goes: its next poll through a stopped
    // proxy would be refused, and Chromium logs that as a console error.
    await page.goto("about:blank").catch(() => {});
    await proxy.stop();
  }
});

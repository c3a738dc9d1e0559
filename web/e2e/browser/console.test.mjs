// End-to-end tests of the operator console in the gateway's page (headless
// Debian Chromium): tools with source and state, a call from the form with
// its arguments checked against the schema, the history and its filters,
// approvals and the chat's error message. Screenshots are kept as artifacts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { pageFixture, keepScreenshot } from "../lib/browser.mjs";

let gw;
let page;
let consoleWatch;
pageFixture({ viewport: { width: 1360, height: 1000 } }, (f) => ({ gw, page, consoleWatch } = f));

async function openConsole() {
  await page.goto(`${gw.url}/#agent_key=${encodeURIComponent(gw.agentKey)}`);
  await page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  const sessionId = await page.evaluate(() => globalThis.toolgateClient.sessionId);
  await page.locator(`[data-testid="tools-table"] tr[data-tool="page_info"][data-session-id="${sessionId}"]`).waitFor({ timeout: 10000 });
  return sessionId;
}

test("without the agent key the console asks for it; a wrong key is refused", async () => {
  await page.goto(`${gw.url}/`);
  await page.locator('[data-testid="key-form"]').waitFor();
  assert.equal(await page.locator("#console-body").isHidden(), true);
  await page.fill('[data-testid="key-form"] input[name="key"]', "not-the-key");
  consoleWatch.allow(/status of 401/);
  await page.click('[data-testid="key-form"] button[type="submit"]');
  await page.locator('[data-testid="key-form"] [data-role="error"]').filter({ hasText: /refused/ }).waitFor({ timeout: 10000 });
  await page.fill('[data-testid="key-form"] input[name="key"]', gw.agentKey);
  await page.click('[data-testid="key-form"] button[type="submit"]');
  await page.locator('[data-testid="tools-table"] tr[data-tool="ask_user"]').first().waitFor({ timeout: 10000 });
});

test("the console lists tools, calls one from the form after checking its arguments, and shows the history", async () => {
  const sessionId = await openConsole();
  assert.equal(new URL(page.url()).hash, "", "the key is taken out of the address bar");
  const row = page.locator(`[data-testid="tools-table"] tr[data-tool="page_info"][data-session-id="${sessionId}"]`);
  assert.match(await row.textContent(), /this page/);
  assert.equal(await row.locator('[data-role="presence"]').textContent(), "connected");

  // Arguments are checked against the schema before anything is sent.
  await page.locator(`[data-testid="tools-table"] tr[data-tool="ask_user"][data-session-id="${sessionId}"] button`).click();
  await page.fill('#call-form textarea[name="args"]', '{"question": 5, "colour": "red"}');
  await page.click('#call-form button[type="submit"]');
  const problems = page.locator('[data-testid="call-problems"] li');
  await problems.first().waitFor();
  const texts = await problems.allTextContents();
  assert.ok(texts.some((t) => /question.*must be string/.test(t)), texts.join(" | "));
  assert.ok(texts.some((t) => /colour.*not an allowed property/.test(t)), texts.join(" | "));
  await page.fill('#call-form textarea[name="args"]', "{not json");
  await page.click('#call-form button[type="submit"]');
  await page.locator('[data-testid="call-problems"] li', { hasText: "not valid JSON" }).waitFor();

  // A valid call goes through and the page itself answers it.
  await page.selectOption('#call-form select[name="tool"]', `${sessionId}/page_info`);
  await page.click('#call-form button[type="submit"]');
  const result = page.locator('[data-testid="call-result"]');
  await result.locator('.chip[data-status="completed"]').waitFor({ timeout: 10000 });
  assert.match(await result.textContent(), /"title": "toolgate"/);

  // The history shows it, and its filters narrow it.
  const history = page.locator('[data-testid="history-table"] tbody');
  await history.locator('tr[data-status="completed"]', { hasText: "page_info" }).first().waitFor({ timeout: 10000 });
  await gw.call(sessionId, "ask_user", { question: "Pick one", choices: ["a", "b"] }, { wait: false, timeout_ms: 500 });
  await page.fill('#history-filters input[name="tool"]', "ask_user");
  await history.locator('tr[data-status="timed_out"]').first().waitFor({ timeout: 15000 });
  assert.equal(await history.locator("tr.clickable").count(), 1, "only the ask_user call is listed");
  await page.selectOption('#history-filters select[name="status"]', "completed");
  await history.locator("td.empty").waitFor({ timeout: 10000 });
  await page.fill('#history-filters input[name="tool"]', "");
  await page.selectOption('#history-filters select[name="status"]', "");
  await history.locator('tr[data-status="completed"]').first().click();
  await history.locator("tr.details:not([hidden]) pre").first().waitFor();

  await page.locator('[data-testid="approvals"] [data-role="approval-empty"]').waitFor();
  await keepScreenshot(page, "page-with-console");
});

test("the console pages the tools: a next page, and back to the first", async () => {
  // One session with more tools than a page holds (100).
  const { status, body: created } = await gw.api("/v1/sessions", { method: "POST", body: { client: { name: "many-tools" } } });
  assert.equal(status, 201, JSON.stringify(created));
  const tools = Array.from({ length: 130 }, (_, i) => ({ name: `t${String(i).padStart(3, "0")}`, description: "one of many", parameters: { type: "object" } }));
  const registered = await gw.api(`/v1/sessions/${created.session_id}/tools`, {
    method: "POST",
    body: { type: "register_tools", tools },
    headers: { Authorization: `Bearer ${created.token}` },
  });
  assert.equal(registered.status, 200, JSON.stringify(registered.body));

  await openConsole();
  const summary = page.locator('[data-role="tools-summary"]');
  await summary.filter({ hasText: "more on the next" }).waitFor({ timeout: 10000 });
  assert.equal(await page.locator('[data-testid="tools-table"] tbody tr').count(), 100);
  const pager = page.locator('[data-testid="tools-pager"]');
  await pager.locator('[data-role="tools-next"]').click();
  await summary.filter({ hasText: "page 2" }).waitFor({ timeout: 10000 });
  const rows = page.locator('[data-testid="tools-table"] tbody tr');
  await page.locator(`[data-testid="tools-table"] tr[data-tool="t129"][data-session-id="${created.session_id}"]`).waitFor({ timeout: 10000 });
  assert.ok((await rows.count()) <= 100, `page 2 has ${await rows.count()} rows`);
  await pager.locator('[data-role="tools-first"]').click();
  await summary.filter({ hasText: "page 1" }).waitFor({ timeout: 10000 });
  await page.locator('[data-testid="tools-table"] tr[data-tool="ask_user"]').first().waitFor({ timeout: 10000 });

  await gw.api(`/v1/sessions/${created.session_id}`, { method: "DELETE" });
});

test("the chat shows the gateway's error when no model is configured", async () => {
  await openConsole();
  consoleWatch.allow(/Failed to load resource.*\/v1\/runs|status of (4|5)\d\d/);
  await page.fill('#chat-form input[name="input"]', "What is the title of my page?");
  await page.click('#chat-form button[type="submit"]');
  const error = page.locator('[data-testid="chat"] li[data-role="error"]');
  await error.waitFor({ timeout: 15000 });
  assert.match(await error.textContent(), /The agent could not run: .+/);
  assert.equal(await page.locator('[data-testid="chat"] li[data-role="user"]').textContent(), "What is the title of my page?");
});

test("the page is usable on a phone-sized screen", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await openConsole();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
  await keepScreenshot(page, "page-phone");
});

// Last in the file: it stops the gateway.
test("a closed tab's tools are away, never connected; a gateway that cannot be reached is said plainly", async () => {
  const sessionId = await openConsole();
  // A second tab of the same browser, with a session of its own, then closed.
  const other = await page.context().newPage();
  await other.goto(`${gw.url}/`);
  await other.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  const otherId = await other.evaluate(() => globalThis.toolgateClient.sessionId);
  const otherRow = page.locator(`[data-testid="tools-table"] tr[data-tool="page_info"][data-session-id="${otherId}"]`);
  await otherRow.locator('[data-role="presence"]', { hasText: "connected" }).waitFor({ timeout: 10000 });
  await other.close();
  // Within its grace the session is callable (calls wait for it): "away", never "connected".
  await otherRow.locator('[data-role="presence"]', { hasText: "away" }).waitFor({ timeout: 15000 });
  const mine = page.locator(`[data-testid="tools-table"] tr[data-tool="page_info"][data-session-id="${sessionId}"]`);
  assert.equal(await mine.locator('[data-role="presence"]').textContent(), "connected");
  assert.equal(await page.locator('[data-testid="gateway-down"]').isHidden(), true);

  consoleWatch.allow(/ERR_CONNECTION_REFUSED|Failed to fetch|net::ERR_/);
  await gw.stop();
  const banner = page.locator('[data-testid="gateway-down"]');
  await banner.waitFor({ state: "visible", timeout: 15000 });
  assert.match(await banner.textContent(), /The gateway cannot be reached since/);
  assert.match(await page.locator('[data-testid="console-refresh"]').textContent(), /gateway unreachable since/);
  const chips = await page.locator('[data-testid="tools-table"] [data-role="presence"]').allTextContents();
  assert.ok(chips.length > 0 && chips.every((c) => c === "unknown"), `no tool is shown connected: ${chips}`);
  await keepScreenshot(page, "console-gateway-down");
});

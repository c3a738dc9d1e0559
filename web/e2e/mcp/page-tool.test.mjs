// An MCP host reaching a tool that a page in Chromium registered: the
// official TypeScript SDK's client (Client + StreamableHTTPClientTransport,
// protocol 2025-11-25: initialize, a session, the GET stream) connects to the
// gateway's /mcp with the agent key, finds the page's tool under its /mcp
// name (<tool>__<last 12 hex digits of the session id>), calls it and gets
// what the page computed; the same tool is called under its own name
// through /mcp/sessions/{sid}; a tool_error the page answers (the person
// declines a question) comes back as isError. Then the tab goes away: the
// host is told (notifications/tools/list_changed on its GET stream) and the
// tool leaves tools/list once the session's grace has passed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startGateway } from "../lib/gateway.mjs";
import { launchBrowser, watchConsole } from "../lib/browser.mjs";
import { until } from "../lib/wait.mjs";
import { mcpToolName, connectMcp } from "./mcp-client.mjs";

// Short, so the closed tab's tools leave the listing within the test: the
// engine notices a grace has passed at its sweep (every --sweep-interval,
// 30 s by default), so that is short too.
const SESSION_GRACE = "2s";
const SWEEP_INTERVAL = "1s";

let gw;
let browser;
const hosts = [];

before(async () => {
  gw = await startGateway({ args: ["--session-grace", SESSION_GRACE, "--sweep-interval", SWEEP_INTERVAL] });
  browser = await launchBrowser();
});

after(async () => {
  await Promise.all(hosts.splice(0).map((c) => c.close().catch(() => {})));
  await browser?.close();
  await gw?.stop();
});

/** Connects a TypeScript SDK client to `path` of the gateway and closes it after the file. */
async function host(path) {
  const client = await connectMcp(`${gw.url}${path}`, gw.agentKey);
  hosts.push(client);
  return client;
}

/** The text of a tool result's text content items, joined. */
function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

test("a TypeScript SDK host calls the tool a page in Chromium registered, and is told when the tab goes away", async () => {
  const context = await browser.newContext({ viewport: { width: 1024, height: 700 }, locale: "en-US" });
  const page = await context.newPage();
  const consoleWatch = watchConsole(page);
  await page.goto(`${gw.url}/`);
  await page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 15000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll('[data-testid="page-tools"] [data-role="registration"]')].every((c) => c.textContent === "registered"),
    null,
    { timeout: 10000 },
  );
  const sessionId = await page.evaluate(() => globalThis.toolgateClient.sessionId);
  const pageInfo = mcpToolName("page_info", sessionId);

  // /mcp: every reachable session's tools, this page's under <tool>__<h>.
  const mcp = await host("/mcp");
  assert.equal(mcp.getServerCapabilities()?.tools?.listChanged, true, "the server offers tools/list_changed");
  const listed = await mcp.listTools();
  const names = listed.tools.map((t) => t.name);
  for (const tool of ["ask_user", "get_location", "get_selection", "page_info"]) {
    assert.ok(names.includes(mcpToolName(tool, sessionId)), `${mcpToolName(tool, sessionId)} is listed on /mcp: ${names.join(", ")}`);
  }
  for (const name of names) assert.match(name, /^[A-Za-z0-9_.-]{1,128}$/, "a valid MCP tool name");
  assert.equal(listed.tools.find((t) => t.name === pageInfo).inputSchema.type, "object");

  const viaMcp = await mcp.callTool({ name: pageInfo, arguments: {} });
  assert.notEqual(viaMcp.isError, true, JSON.stringify(viaMcp));
  assert.equal(viaMcp.structuredContent.url, `${gw.url}/`, JSON.stringify(viaMcp));
  assert.equal(viaMcp.structuredContent.title, "toolgate");
  assert.deepEqual(viaMcp.structuredContent.viewport, { width: 1024, height: 700, device_pixel_ratio: 1 });
  assert.deepEqual(JSON.parse(textOf(viaMcp)), viaMcp.structuredContent, "the text content carries the same output");
  // The page shows the call it answered, like any toolgate call.
  await page.locator('[data-testid="call-log"] [data-role="status"]').filter({ hasText: /^answered$/ }).first().waitFor({ timeout: 5000 });

  // /mcp/sessions/{sid}: the page's tools under their own names.
  const own = await host(`/mcp/sessions/${sessionId}`);
  const ownNames = (await own.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(ownNames, ["ask_user", "get_location", "get_selection", "page_info"]);
  const viaSession = await own.callTool({ name: "page_info", arguments: {} });
  assert.equal(viaSession.structuredContent.url, `${gw.url}/`, JSON.stringify(viaSession));

  // The person declines a question: a tool_error, which MCP carries as isError.
  const asked = own.callTool({ name: "ask_user", arguments: { question: "May I read the page?" } });
  await page.locator('[data-testid="question"] [data-role="decline"]').click({ timeout: 10000 });
  const declined = await asked;
  assert.equal(declined.isError, true, JSON.stringify(declined));
  assert.match(textOf(declined), /PERMISSION_DENIED|declined/i, JSON.stringify(declined));

  // The tab goes away. Its tools stay listed (and callable) through the
  // grace; then they leave tools/list and the host is told. A
  // notification counts only when it came after the last listing that
  // still showed the tool was asked for.
  const changes = [];
  mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => changes.push(performance.now()));
  await context.close();
  assert.deepEqual(consoleWatch.problems, [], "the page logged errors");
  let lastListedAt = performance.now();
  await until(
    async () => {
      const askedAt = performance.now();
      const listedNow = (await mcp.listTools()).tools.some((t) => t.name === pageInfo);
      if (listedNow) lastListedAt = askedAt;
      return !listedNow;
    },
    15000,
    `${pageInfo} leaving /mcp's tools/list after the ${SESSION_GRACE} grace`,
  );
  await until(() => changes.some((at) => at > lastListedAt), 5000, "notifications/tools/list_changed on the host's GET stream when the tools left");
  // The session's own route lists nothing callable any more.
  const left = await own.listTools().then((r) => r.tools.map((t) => t.name), (err) => `refused: ${err.message}`);
  assert.ok(Array.isArray(left) ? left.length === 0 : /404|not found|session/i.test(left), `/mcp/sessions/{sid} after the grace: ${left}`);
});

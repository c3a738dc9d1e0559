// The official MCP conformance suite (npm @modelcontextprotocol/conformance)
// against the gateway's /mcp/sessions/{sid}, for both revisions the gateway
// serves: 2025-11-25 (initialize, sessions, the GET stream) and 2026-07-28
// (stateless). The tools the suite calls belong to a real toolgate client
// session (the browser SDK in Node, conformance-tools.mjs), so every
// tools/call of the suite is a toolgate call answered over the client's
// stream. The suite cannot send an Authorization header, so an nginx in
// front of the gateway adds the agent key (which also shows /mcp working
// through a streaming proxy). A scenario that fails and is not in the
// revision's expected-failures baseline fails the test, and so does a
// baselined one that passes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { startProxy } from "../lib/nginx.mjs";
import { registerConformanceTools } from "./conformance-tools.mjs";
import { runConformance, readResults, baselinePath } from "./conformance.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.TOOLGATE_ARTIFACTS ?? resolve(here, "../../../test-artifacts");

let gw;
let proxy;
let client;
let sessionUrl;

before(async () => {
  gw = await startGateway();
  proxy = await startProxy(join(here, "auth-proxy.conf.template"), gw.hostPort, { AGENT_KEY: gw.agentKey });
  client = new ToolgateClient({ baseUrl: gw.url, storage: null, transport: "sse", client: { name: "mcp-conformance" } });
  const outcomes = registerConformanceTools(client);
  await client.connect();
  const judged = await outcomes;
  for (const [name, outcome] of Object.entries(judged)) assert.deepEqual(outcome, { registered: true }, `${name} was registered`);
  sessionUrl = `${proxy.url}/mcp/sessions/${client.sessionId}`;
});

after(async () => {
  await client?.close({ endSession: true });
  await proxy?.stop();
  await gw?.stop();
});

test("/mcp wants the agent key, refuses a foreign Origin, tells proxies not to buffer; the proxy in front adds the key", async () => {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } },
  });
  // Straight to the gateway without the key: refused.
  const direct = await fetch(`${gw.url}/mcp/sessions/${client.sessionId}`, { method: "POST", headers, body: initialize });
  assert.equal(direct.status, 401, await direct.text());
  // With it, the reply is a stream a proxy is told not to hold back
  // (nginx itself drops X-Accel-* headers, so this is asked of the gateway).
  const keyed = await fetch(`${gw.url}/mcp/sessions/${client.sessionId}`, {
    method: "POST",
    headers: { ...headers, Authorization: `Bearer ${gw.agentKey}` },
    body: initialize,
  });
  await keyed.text();
  assert.equal(keyed.status, 200);
  assert.match(keyed.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(keyed.headers.get("x-accel-buffering"), "no");
  // Through the proxy (which adds the key): answered, unless a page of
  // another origin asks.
  const init = await fetch(sessionUrl, { method: "POST", headers, body: initialize });
  const text = await init.text();
  assert.equal(init.status, 200, `${text}\n${proxy.errorLog()}`);
  assert.match(text, /"protocolVersion":"2025-11-25"/);
  const foreign = await fetch(sessionUrl, { method: "POST", headers: { ...headers, Origin: "https://evil.example.com" }, body: initialize });
  assert.equal(foreign.status, 403, await foreign.text());
});

for (const revision of ["2025-11-25", "2026-07-28"]) {
  test(`the conformance suite at ${revision} passes every scenario outside its baseline`, async () => {
    const outputDir = join(artifacts, "mcp-conformance", revision);
    rmSync(outputDir, { recursive: true, force: true });
    mkdirSync(outputDir, { recursive: true });
    const run = await runConformance({ url: sessionUrl, revision, baseline: baselinePath(revision), outputDir });
    const results = readResults(outputDir);
    const summary = Object.fromEntries(Object.entries(results).map(([name, r]) => [name, r.passed ? "pass" : r.failed]));
    writeFileSync(join(outputDir, "summary.json"), JSON.stringify({ revision, seconds: run.seconds, exitCode: run.code, scenarios: summary }, null, 2));
    assert.ok(Object.keys(results).length > 10, `the suite ran its scenarios (results in ${outputDir}):\n${run.output}`);
    assert.equal(run.code, 0, `conformance ${revision} against ${sessionUrl} (results in ${outputDir}):\n${tail(run.output)}\n\ngateway log:\n${gw.log}`);
  });
}

/** The end of the CLI's output, where its baseline verdict is. */
function tail(output, lines = 120) {
  return output.split("\n").slice(-lines).join("\n");
}

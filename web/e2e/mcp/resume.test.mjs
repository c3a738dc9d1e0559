// An MCP host's tools/call survives a kill -9 of the gateway: the official
// TypeScript SDK v1 client (protocol 2025-11-25: a session, event ids on the
// POST's stream) calls a tool of a toolgate client session (the browser
// SDK's ToolgateClient, in Node), the gateway is killed with SIGKILL while
// the call waits for the client, and started again on the same port and
// database. The client reconnects and answers; the host, whose POST stream
// dropped, resumes it (GET with Last-Event-ID, as the SDK does by itself)
// and gets the result; its session id still works; one call was made.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { until } from "../lib/wait.mjs";
import { mcpToolName } from "./mcp-client.mjs";

let gw;
let client;
let host;

after(async () => {
  await host?.close().catch(() => {});
  await client?.close();
  await gw?.stop();
});

test("a host's tools/call in flight gets its result after the gateway is killed (-9) and restarted", async () => {
  gw = await startGateway();
  let release;
  const answer = new Promise((resolve) => (release = resolve));
  let handled = 0;
  client = new ToolgateClient({ baseUrl: gw.url, storage: null, transport: "sse" });
  client.registerTool({
    name: "slow_echo",
    description: "Echoes the text once the test lets it",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    handler: async ({ text }) => {
      handled++;
      await answer;
      return `echo: ${text}`;
    },
  });
  await client.connect();
  const sessionId = client.sessionId;

  host = new Client({ name: "toolgate-e2e-resume", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${gw.agentKey}` } },
    // The gateway is down for a moment: retry the resume long enough.
    reconnectionOptions: { maxRetries: 30, initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5 },
  });
  await host.connect(transport);
  const mcpSession = transport.sessionId;
  assert.ok(mcpSession, "the host has an MCP session id");
  const name = mcpToolName("slow_echo", sessionId);
  await until(async () => (await host.listTools()).tools.some((t) => t.name === name), 10000, `${name} listed`);

  const pending = host.callTool({ name, arguments: { text: "hi" } }, undefined, { timeout: 60000 });
  pending.catch(() => {});
  await until(() => handled >= 1, 10000, "the client received the call");

  // kill -9, then the same port and database.
  const exited = new Promise((resolve) => gw.proc.once("exit", resolve));
  gw.proc.kill("SIGKILL");
  await exited;
  gw.addr = gw.hostPort;
  await gw.start();
  release();

  const result = await pending;
  const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  assert.equal(text, "echo: hi", `the result after the restart: ${JSON.stringify(result)}`);
  const callId = result._meta?.["io.toolgate/call_id"];
  assert.ok(callId, "the result names its toolgate call");

  // The session id still works after the restart.
  assert.equal(transport.sessionId, mcpSession);
  const listed = await host.listTools();
  assert.ok(listed.tools.some((t) => t.name === name), "tools/list on the same session after the restart");

  // One call, not two.
  const { status, body } = await gw.api(`/v1/calls?session_id=${sessionId}`);
  assert.equal(status, 200, JSON.stringify(body));
  const calls = (body.calls ?? body.items ?? body).filter?.((c) => c.tool === "slow_echo") ?? [];
  assert.equal(calls.length, 1, `calls of slow_echo: ${JSON.stringify(body)}`);
  assert.equal(calls[0].id, callId);
  assert.equal(calls[0].status, "completed");
});

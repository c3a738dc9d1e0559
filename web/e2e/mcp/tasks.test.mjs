// MCP tasks survive a kill -9 of the gateway: the official TypeScript SDK
// v2 client (@modelcontextprotocol/client, protocol 2025-11-25) with the
// official tasks package (@modelcontextprotocol/ext-tasks) calls a client
// session's tool as a task; the gateway answers with the task (its id is
// the toolgate call's) and is killed with SIGKILL; it starts again on the
// same database and port; the client session answers the call through
// REST; a new host connection resumes the task by its id and gets the
// answer from tasks/result.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { startGateway, Gateway } from "../lib/gateway.mjs";
import { mcpToolName } from "./mcp-client.mjs";

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn().catch(() => {});
});

/** Connects the v2 client to `url` (2025-11-25: initialize and a session). */
async function connectV2(url, agentKey) {
  const client = new Client({ name: "toolgate-e2e-tasks", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${agentKey}` } },
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

/** Kills the gateway with SIGKILL and waits for it to exit. */
async function kill9(gw) {
  const exited = new Promise((r) => gw.proc.once("exit", r));
  gw.proc.kill("SIGKILL");
  await exited;
}

test("a task started by the TypeScript SDK v2 client survives kill -9 and returns the REST client's answer", async () => {
  const gw = await startGateway();
  cleanups.push(() => gw.stop());

  // A client session with one tool, registered through REST, online
  // through its event stream.
  const created = await fetch(`${gw.url}/v1/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client: { name: "rest-client", platform: "desktop" } }),
  }).then((r) => r.json());
  const auth = { Authorization: `Bearer ${created.token}`, "Content-Type": "application/json" };
  const reg = await fetch(`${gw.url}/v1/sessions/${created.session_id}/tools`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      type: "register_tools",
      tools: [{ name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } }],
    }),
  });
  assert.equal(reg.status, 200, await reg.text());
  const events = new AbortController();
  fetch(`${gw.url}/v1/sessions/${created.session_id}/events`, { headers: auth, signal: events.signal })
    .then((r) => r.body?.pipeTo(new WritableStream()))
    .catch(() => {});
  cleanups.push(async () => events.abort());
  const name = mcpToolName("lookup", created.session_id);

  const host = await connectV2(`${gw.url}/mcp`, gw.agentKey);
  assert.ok(host.getServerCapabilities()?.tasks?.requests?.tools?.call, "the gateway declares tasks for tools/call");
  let tool;
  for (let i = 0; i < 100 && !tool; i++) {
    tool = (await host.listTools()).tools.find((t) => t.name === name);
    if (!tool) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(tool, `${name} is listed`);
  assert.equal(tool.execution?.taskSupport, "optional");

  const tasks = createTaskSessionFromClient(host, { endpointId: "toolgate" });
  const execution = await tasks.callTool(name, { word: "durable" }, { task: { preference: "require", retentionMs: 600000 } });
  const taskId = execution.handle.taskId;
  assert.ok(taskId, "the call became a task");
  const { body: call } = await gw.api(`/v1/calls/${taskId}`);
  assert.equal(call.tool, "lookup", "the task's id is the toolgate call's id");
  assert.notEqual(call.status, "completed");
  await tasks.close().catch(() => {});

  // kill -9, then the same database on the same port.
  events.abort();
  await kill9(gw);
  const again = new Gateway({ dir: gw.dir, agentKey: gw.agentKey, args: ["--addr", gw.hostPort] });
  await again.start();
  cleanups.push(() => again.stop());
  assert.equal(again.url, gw.url, "restarted on the same address");

  // The REST client answers the call.
  const answered = await fetch(`${again.url}/v1/sessions/${created.session_id}/results`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ type: "tool_result", id: taskId, success: true, output: { meaning: "kept across a crash" } }),
  });
  assert.equal(answered.status, 200, await answered.text());

  // A new connection (the old MCP session died with the process) resumes
  // the task by its id: tasks/get, then tasks/result.
  const host2 = await connectV2(`${again.url}/mcp`, again.agentKey);
  const tasks2 = createTaskSessionFromClient(host2, { endpointId: "toolgate" });
  cleanups.push(() => tasks2.close());
  const resumed = await tasks2.resumeTask({ endpointId: "toolgate", generation: "v1", taskId, originalOperation: "tools/call" });
  const { outcome } = await resumed.settle();
  const result = resultFromTaskOutcome(outcome);
  assert.equal(result.isError ?? false, false);
  assert.deepEqual(result.structuredContent, { meaning: "kept across a crash" });
  assert.equal(result.content[0].text, '{"meaning":"kept across a crash"}');

  const listed = await tasks2.listTasks();
  assert.ok(listed.tasks.some((t) => t.taskId === taskId), "tasks/list shows the task");
});

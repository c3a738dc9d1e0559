// The SDK's recovery paths against a real gateway: a session resumed from
// storage, result posts retried until acknowledged, calls de-duplicated by id,
// a lost session replaced, and the fall back from a held-back stream to
// long-poll (through a real buffering nginx) and back to SSE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage } from "../../static/toolgate.js";
import { sdkFixture } from "../lib/sdk.mjs";
import { startBufferingProxy } from "../lib/nginx.mjs";
import { faultyFetch } from "../lib/fetch-faults.mjs";
import { nextEvent, recordEvents, until } from "../lib/wait.mjs";

let gw;
const newClient = sdkFixture({ reconnectBaseMs: 100, reconnectMaxMs: 1000 }, (g) => {
  gw = g;
});

function counter(name) {
  const tool = {
    name,
    description: `Counts its runs (${name})`,
    runs: 0,
    handler: () => ({ run: ++tool.runs }),
  };
  return tool;
}

test("a new client with the same storage resumes the session and answers the call made while it was away", async () => {
  const storage = new MemoryStorage();
  const first = newClient({ storage, transport: "sse" });
  first.registerTool(counter("count"));
  await first.connect();
  const sessionId = first.sessionId;
  await first.close();

  const pending = await gw.call(sessionId, "count", {}, { wait: false, timeout_ms: 20000 });
  assert.equal(pending.status, "pending");

  const second = newClient({ storage, transport: "sse" });
  const tool = counter("count");
  second.registerTool(tool);
  await second.connect();
  assert.equal(second.sessionId, sessionId, "the stored session is reused");
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.deepEqual(done.output, { run: 1 });
  const stored = JSON.parse(storage.getItem(`toolgate:${gw.url}`));
  assert.equal(stored.sessionId, sessionId);
  assert.equal(typeof stored.token, "string");
  assert.ok(Number.isFinite(stored.cursor), `the cursor is stored: ${JSON.stringify(stored)}`);
});

test("a result post lost on the network is retried until acknowledged; the handler runs once", async () => {
  const net = faultyFetch();
  net.faults.failResults = 2;
  const client = newClient({ fetch: net.fetch, transport: "sse" });
  const tool = counter("flaky_net");
  client.registerTool(tool);
  const errors = recordEvents(client, ["error"]);
  await client.connect();
  const record = await gw.call(client.sessionId, "flaky_net", {}, { timeout_ms: 20000 });
  assert.equal(record.status, "completed");
  assert.equal(tool.runs, 1);
  assert.equal(errors.filter(([, d]) => d.during === "result").length, 2);
  const posts = net.requests.filter((r) => r.method === "POST" && r.url.endsWith("/results"));
  assert.equal(posts.length, 3);
});

test("a 409 CALL_CLOSED ends the retries of an answer", async () => {
  const net = faultyFetch();
  net.faults.failResults = 1;
  const client = newClient({ fetch: net.fetch, transport: "sse" });
  client.registerTool(counter("too_late"));
  const seen = recordEvents(client, ["call"]);
  await client.connect();
  const pending = await gw.call(client.sessionId, "too_late", {}, { wait: false, timeout_ms: 20000 });
  // The first post is lost; before the retry the caller cancels the call.
  net.faults.beforeResult = async () => {
    const res = await gw.api(`/v1/calls/${pending.id}/cancel`, { method: "POST", body: {} });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  const closed = await until(() => seen.map(([, d]) => d).find((d) => d.phase === "closed"), 10000, "the CALL_CLOSED answer");
  assert.equal(closed.error.code, "CALL_CLOSED");
  assert.equal(closed.error.status, 409);
  await new Promise((r) => setTimeout(r, 1500));
  const posts = net.requests.filter((r) => r.method === "POST" && r.url.endsWith("/results"));
  assert.equal(posts.length, 2, "no retry after CALL_CLOSED");
  assert.equal((await gw.waitForCall(pending.id)).status, "cancelled");
});

test("an answer not acknowledged before a reload is posted by the next page, without running the tool again", async () => {
  const storage = new MemoryStorage();
  const net = faultyFetch();
  net.faults.failResults = 1000;
  const first = newClient({ storage, fetch: net.fetch, transport: "sse" });
  const firstTool = counter("answered_once");
  first.registerTool(firstTool);
  const seen = recordEvents(first, ["call"]);
  await first.connect();
  const pending = await gw.call(first.sessionId, "answered_once", {}, { wait: false, timeout_ms: 20000 });
  await until(() => seen.some(([, d]) => d.phase === "answered"), 10000, "the answer");
  await first.close(); // the "reload": the answer never reached the gateway
  assert.equal(JSON.parse(storage.getItem(`toolgate:${gw.url}`)).outbox.length, 1, "the answer waits in storage");

  const second = newClient({ storage, transport: "sse" });
  const secondTool = counter("answered_once");
  second.registerTool(secondTool);
  await second.connect();
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.deepEqual(done.output, { run: 1 }, "the first page's answer");
  assert.equal(secondTool.runs, 0, "the tool did not run again");
  await until(() => JSON.parse(storage.getItem(`toolgate:${gw.url}`)).outbox.length === 0, 5000, "the outbox to empty");
});

test("a call delivered again after a reconnect is not run twice", async () => {
  const net = faultyFetch();
  const client = newClient({ fetch: net.fetch, transport: "sse" });
  let runs = 0;
  let release;
  const released = new Promise((r) => (release = r));
  client.registerTool({
    name: "held",
    description: "Waits for the test",
    handler: async () => {
      runs++;
      await released;
      return "ok";
    },
  });
  const seen = recordEvents(client, ["call"]);
  await client.connect();
  const pending = await gw.call(client.sessionId, "held", {}, { wait: false, timeout_ms: 20000 });
  await until(() => seen.some(([, d]) => d.phase === "received"), 10000, "the delivery");

  // Reconnect without the cursor: the gateway then sends every open call again.
  net.faults.dropLastEventId = true;
  const streamsBefore = net.requests.filter((r) => r.stream).length;
  net.breakStreams();
  await until(() => net.requests.filter((r) => r.stream).length > streamsBefore && client.state === "connected", 10000, "the reconnect");
  await new Promise((r) => setTimeout(r, 500));
  release();
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed");
  assert.equal(runs, 1);
  assert.equal(seen.filter(([, d]) => d.phase === "received").length, 1);
  const reconnect = net.requests.filter((r) => r.stream).at(-1);
  assert.ok(reconnect.lastEventId !== undefined, "the SDK resumed with its cursor (the test removed it)");
});

test("a session the gateway no longer knows is replaced and the tools registered again", async () => {
  const storage = new MemoryStorage();
  const net = faultyFetch();
  const client = newClient({ storage, fetch: net.fetch, transport: "sse" });
  client.registerTool(counter("again"));
  await client.connect();
  const oldId = client.sessionId;
  const { token } = JSON.parse(storage.getItem(`toolgate:${gw.url}`));
  const closed = await fetch(`${gw.url}/v1/sessions/${oldId}/close`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  assert.equal(closed.status, 200);

  const replaced = nextEvent(client, "session", (d) => d.created === true);
  net.breakStreams();
  const { sessionId: newId } = await replaced;
  assert.notEqual(newId, oldId);
  await until(() => client.state === "connected", 10000, "the reconnect");
  const tools = await gw.toolsOf(newId);
  assert.ok(tools.some((t) => t.name === "again"), "the tool is registered in the new session");
  const record = await gw.call(newId, "again", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed");
});

test("auto falls back to long-poll behind a buffering nginx and calls are answered", async () => {
  const proxy = await startBufferingProxy(gw.hostPort);
  try {
    const client = newClient({ baseUrl: proxy.url, transport: "auto", sseReadyTimeoutMs: 1500, sseRetryMs: 2000 });
    client.registerTool(counter("behind_proxy"));
    const errors = recordEvents(client, ["error"]);
    const transports = recordEvents(client, ["transport"]);
    await client.connect();
    assert.equal(client.transport, "poll");
    assert.ok(errors.some(([, d]) => d.error.code === "STREAM_NOT_READY"), "the held stream was noticed");

    const res = await fetch(`${proxy.url}/v1/calls`, {
      method: "POST",
      headers: { Authorization: `Bearer ${gw.agentKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ session_id: client.sessionId, tool: "behind_proxy", args: {}, timeout_ms: 15000 }),
    });
    const record = await res.json();
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.deepEqual(record.output, { run: 1 });

    // The SSE probe after sseRetryMs is held back too, so polling goes on.
    await until(() => errors.some(([, d]) => d.during === "stream-probe"), 10000, "a second try of the stream");
    assert.equal(client.transport, "poll");
    assert.deepEqual(transports.map(([, d]) => d.transport), ["poll"]);
  } finally {
    await proxy.stop();
  }
});

test("auto goes back to SSE once a stream gets through again", async () => {
  const net = faultyFetch();
  net.faults.holdStreams = 1;
  const client = newClient({ fetch: net.fetch, transport: "auto", sseReadyTimeoutMs: 800, sseRetryMs: 1000 });
  const tool = counter("switch_back");
  client.registerTool(tool);
  const transports = recordEvents(client, ["transport"]);
  await client.connect();
  assert.equal(client.transport, "poll");
  await nextEvent(client, "transport", (d) => d.transport === "sse", 10000);
  assert.deepEqual(transports.map(([, d]) => d.transport), ["poll", "sse"]);
  // The gateway's probe said the path streams again; then the stream opened.
  const probe = net.requests.findIndex((r) => /\/probe$/.test(r.url));
  assert.ok(probe !== -1, "the stream was probed");
  assert.ok(net.requests.slice(probe + 1).some((r) => /\/events$/.test(r.url)), "the stream opened after the probe");
  const record = await gw.call(client.sessionId, "switch_back", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed");
  assert.equal(tool.runs, 1);
});

test("a stream that goes silent after ready counts as stalled, and auto mode polls", async () => {
  const net = faultyFetch();
  net.faults.freezeStreamsAfterReady = true;
  const client = newClient({ fetch: net.fetch, transport: "auto", stallTimeoutMs: 1000, sseRetryMs: 60000 });
  const tool = counter("after_stall");
  client.registerTool(tool);
  const errors = recordEvents(client, ["error"]);
  const transports = recordEvents(client, ["transport"]);
  await client.connect();
  assert.equal(client.transport, "sse", "the stream delivered ready");
  await nextEvent(client, "transport", (d) => d.transport === "poll", 10000);
  assert.ok(errors.some(([, d]) => d.error.code === "STREAM_STALLED"));
  assert.deepEqual(transports.map(([, d]) => d.transport), ["sse", "poll"]);
  const record = await gw.call(client.sessionId, "after_stall", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed");
  assert.equal(tool.runs, 1);
});

test("close() aborts running handlers; connect() again gets their calls back", async () => {
  const client = newClient({ transport: "poll" });
  let runs = 0;
  let abortedWith = null;
  client.registerTool({
    name: "interrupted",
    description: "Waits on the first run, answers on the second",
    handler: (_args, { signal }) => {
      runs++;
      if (runs > 1) return "second run";
      return new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => {
          abortedWith = signal.reason;
          reject(signal.reason);
        }),
      );
    },
  });
  await client.connect();
  const pending = await gw.call(client.sessionId, "interrupted", {}, { wait: false, timeout_ms: 20000 });
  await until(() => runs === 1, 10000, "the first run");
  await client.close();
  assert.match(abortedWith.message, /client_closed/);
  assert.equal(client.state, "closed");
  await client.connect();
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.equal(done.output, "second run");
  assert.equal(runs, 2);
});

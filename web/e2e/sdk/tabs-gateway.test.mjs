// Ten clients of one page sharing the page's connection (the tab
// coordinator, with a fake Web Locks manager: Node 20 has BroadcastChannel
// but no navigator.locks) against a real gateway started with
// `--max-sessions-per-stream 4`: the sessions are split over streams of at most
// 4, and every client answers its own tool. With the multi-session
// endpoints hidden (404, as from an earlier gateway) each client falls back
// to a connection of its own and answers too.
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { FakeLocks } from "../lib/tab-fakes.mjs";
import { startGateway } from "../lib/gateway.mjs";

globalThis.navigator ??= {};
globalThis.navigator.locks = new FakeLocks();
const { ToolgateClient } = await import("../../static/toolgate.js");
const { tabCoordinator } = await import("../../static/toolgate-tabs.js");

let gw;
before(async () => {
  gw = await startGateway({ args: ["--max-sessions-per-stream", "4"] });
});
afterEach(() => tabCoordinator(gw.url, {}).dispose());
after(async () => {
  await gw?.stop();
});

test("10 clients, a gateway taking 4 sessions per stream: streams of at most 4, every client answers", async () => {
  const opens = [];
  const recordingFetch = async (url, init = {}) => {
    const res = await fetch(url, init);
    if (init.method === "POST" && new URL(url).pathname === "/v1/streams") opens.push({ sessions: JSON.parse(init.body).sessions.length, status: res.status });
    return res;
  };
  const clients = Array.from({ length: 10 }, (_, i) => {
    const client = new ToolgateClient({ baseUrl: gw.url, storage: null, fetch: recordingFetch, reconnectBaseMs: 100, reconnectMaxMs: 1000 });
    client.registerTool({ name: `tool_${i}`, description: `Answers ${i}`, handler: () => ({ i }) });
    return client;
  });
  try {
    await Promise.all(clients.map((c) => c.connect()));
    assert.ok(clients.every((c) => c.sharesConnection), "the clients share the page's connection");
    const records = await Promise.all(clients.map((c, i) => gw.call(c.sessionId, `tool_${i}`, {}, { timeout_ms: 10000 })));
    records.forEach((record, i) => {
      assert.equal(record.status, "completed", JSON.stringify(record));
      assert.deepEqual(record.output, { i });
    });
    const served = opens.filter((o) => o.status === 200);
    assert.ok(served.length >= 3, `at least 3 streams for 10 sessions: ${JSON.stringify(opens)}`);
    assert.ok(served.every((o) => o.sessions <= 4), JSON.stringify(opens));
    assert.ok(opens.filter((o) => o.status === 400).length <= 1, `at most one open refused: ${JSON.stringify(opens)}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

test("a gateway without the multi-session endpoints (404): each client falls back to a connection of its own and answers", async () => {
  const asked = [];
  const withoutMulti = async (url, init = {}) => {
    const path = new URL(url).pathname;
    asked.push(path);
    if (path === "/v1/streams" || path === "/v1/poll") return new Response("404 page not found\n", { status: 404 });
    return fetch(url, init);
  };
  const clients = Array.from({ length: 3 }, (_, i) => {
    const client = new ToolgateClient({ baseUrl: gw.url, storage: null, fetch: withoutMulti, reconnectBaseMs: 100, reconnectMaxMs: 1000 });
    client.registerTool({ name: `old_${i}`, description: `Answers ${i}`, handler: () => ({ i }) });
    return client;
  });
  try {
    await Promise.all(clients.map((c) => c.connect()));
    assert.ok(clients.every((c) => !c.sharesConnection), "each client is on its own");
    const records = await Promise.all(clients.map((c, i) => gw.call(c.sessionId, `old_${i}`, {}, { timeout_ms: 10000 })));
    records.forEach((record, i) => assert.deepEqual([record.status, record.output], ["completed", { i }]));
    const multiTries = asked.filter((p) => p === "/v1/streams" || p === "/v1/poll").length;
    assert.equal(multiTries, 1, "one try of the multi-session endpoints");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

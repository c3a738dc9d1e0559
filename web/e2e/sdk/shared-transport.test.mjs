// The shared connection (toolgate-lane.js) between the stream and the poll,
// against the real gateway and its stream probe (GET /v1/sessions/{sid}/probe):
// a stream held back sends it to the poll; a probe that streams brings it
// back; behind a real buffering nginx the probes fail and it stays on the
// poll, probing less and less often. Node has no Web Locks: the page's lock
// manager is the fake of lib/tab-fakes.mjs (one page, which leads).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage, ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { startBufferingProxy } from "../lib/nginx.mjs";
import { FakeLocks } from "../lib/tab-fakes.mjs";
import { recordEvents, until } from "../lib/wait.mjs";

globalThis.navigator ??= {};
globalThis.navigator.locks ??= new FakeLocks();
// Node's BroadcastChannel keeps the process alive while open; a page's channel stays open.
globalThis.BroadcastChannel = class extends BroadcastChannel {
  constructor(name) {
    super(name);
    this.unref();
  }
};

const running = [];
after(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

const gw = await startGateway();
running.push(() => gw.stop());

/** A shared client of `baseUrl` whose requests are listed; `hold(path, n)` keeps the n-th request of a path from going out. */
function sharedClient(baseUrl, { hold = () => false, ...options } = {}) {
  const requests = [];
  const counts = new Map();
  const fetchFn = (url, init = {}) => {
    const path = new URL(url).pathname;
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    requests.push({ path, at: Date.now() });
    if (hold(path, n)) {
      return new Promise((_resolve, reject) => init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")), { once: true }));
    }
    return fetch(url, init);
  };
  const client = new ToolgateClient({ baseUrl, storage: null, pathStorage: new MemoryStorage(), fetch: fetchFn, ...options });
  running.push(() => client.close());
  client.registerTool({ name: "echo", description: "Answers with its call id", handler: (_args, { callId }) => ({ answered: callId }) });
  return { client, requests };
}

test("a held-back shared stream falls to the poll; a probe that streams brings it back", async () => {
  // The first stream is held (as a buffering proxy would); the path is clear after that.
  const { client, requests } = sharedClient(gw.url, { sseReadyTimeoutMs: 1000, sseRetryMs: 1500, hold: (path, n) => path === "/v1/streams" && n === 1 });
  const transports = recordEvents(client, ["transport"]);
  const errors = recordEvents(client, ["error"]);
  await client.connect();
  assert.equal(client.sharesConnection, true);
  assert.equal(client.transport, "poll");
  await until(() => client.transport === "sse", 10000, "the stream back");
  assert.deepEqual(errors.map(([, d]) => d.during), ["stream"], "the held stream, and no failed probe");
  const seen = transports.map(([, d]) => d.transport).filter(Boolean);
  assert.deepEqual(seen, ["poll", "sse"]);
  const probes = requests.filter((r) => /\/probe$/.test(r.path));
  const streams = requests.filter((r) => r.path === "/v1/streams");
  assert.equal(probes.length, 1, "one probe");
  assert.equal(streams.length, 2, "the held stream, and the one opened after the probe passed");
  assert.ok(streams[1].at >= probes[0].at, "the stream opened after the probe");
  const record = await gw.call(client.sessionId, "echo", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed", JSON.stringify(record));
  assert.equal(client.connection.transport, "sse");
  assert.equal(client.connection.heartbeat_ms, 15000);
});

test("behind a buffering nginx the probes fail, less and less often, and the shared connection stays on the poll", async () => {
  const proxy = await startBufferingProxy(gw.hostPort);
  running.push(() => proxy.stop());
  const { client, requests } = sharedClient(proxy.url, { sseReadyTimeoutMs: 1000, sseRetryMs: 1000, sseRetryMaxMs: 4000 });
  const errors = recordEvents(client, ["error"]);
  const transports = recordEvents(client, ["transport"]);
  await client.connect();
  assert.equal(client.transport, "poll");
  await until(() => requests.filter((r) => /\/probe$/.test(r.path)).length >= 3, 20000, "three probes");
  const probes = requests.filter((r) => /\/probe$/.test(r.path)).map((r) => r.at);
  const gaps = probes.slice(1).map((at, i) => at - probes[i]);
  assert.ok(gaps[1] > gaps[0] * 1.5, `each failed probe doubles the wait: gaps ${gaps}`);
  assert.equal(requests.filter((r) => r.path === "/v1/streams").length, 1, "no stream opened after the first: the probes decided");
  assert.ok(errors.filter(([, d]) => d.during === "stream-probe").length >= 2);
  assert.deepEqual(transports.map(([, d]) => d.transport), ["poll"], "never left the poll");
  const res = await fetch(`${proxy.url}/v1/calls`, {
    method: "POST",
    headers: { Authorization: `Bearer ${gw.agentKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ session_id: client.sessionId, tool: "echo", args: {}, timeout_ms: 15000 }),
  });
  const record = await res.json();
  assert.equal(record.status, "completed", JSON.stringify(record));
  // Leave before the proxy goes: a poll through a stopped proxy fails loudly.
  await client.close();
});

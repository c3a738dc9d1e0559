// The connection the tabs share (toolgate-tabs.js, toolgate-lane.js) behind
// a real nginx that cuts idle connections, with the SDK's default settings:
// the real client, the real gateway, real HTTP. Node has no Web Locks, so
// the page's lock manager is the fake of lib/tab-fakes.mjs (one page: it
// leads); BroadcastChannel is Node's own. It shows that a stream cut again
// and again reconnects at once every time, that two cuts at the same idle
// age make the stream ask for a heartbeat below it, and that polls the
// proxy answers 504 shorten their hold and every call is answered.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage, ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { startIdleCuttingProxy } from "../lib/nginx.mjs";
import { FakeLocks } from "../lib/tab-fakes.mjs";
import { until } from "../lib/wait.mjs";

globalThis.navigator ??= {};
globalThis.navigator.locks ??= new FakeLocks();
// Node's BroadcastChannel keeps the process alive while open; a page's channel stays open.
globalThis.BroadcastChannel = class extends BroadcastChannel {
  constructor(name) {
    super(name);
    this.unref();
  }
};

const CUT_MS = 3000;
const running = [];
after(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

/** A storage that keeps nothing (a private window's): the path is never learned. */
const forgetful = { getItem: () => null, setItem: () => {}, removeItem: () => {} };

/**
 * A gateway started with `args`, nginx cutting connections idle for CUT_MS,
 * and a client of the proxy on the shared connection, recording every
 * request body of the multi-session endpoints, each recovery (reconnecting
 * -> connected, in ms) and the state changes.
 */
async function sharedBehindIdleProxy(args, { hold = null, ...clientOptions } = {}) {
  const gw = await startGateway({ args });
  running.push(() => gw.stop());
  const proxy = await startIdleCuttingProxy(gw.hostPort, { readTimeout: `${CUT_MS / 1000}s` });
  running.push(() => proxy.stop());
  const sent = [];
  const fetchFn = (url, init = {}) => {
    const path = new URL(url).pathname;
    if (path === "/v1/streams" || path === "/v1/poll") sent.push({ path, at: Date.now(), body: JSON.parse(init.body) });
    // `hold` may keep a request from going out (a proxy that holds streams back).
    if (hold?.(path)) {
      return new Promise((_resolve, reject) => init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")), { once: true }));
    }
    return fetch(url, init);
  };
  const client = new ToolgateClient({ baseUrl: proxy.url, storage: null, fetch: fetchFn, ...clientOptions });
  running.push(() => client.close());
  assert.equal(client.sharesConnection, true, "the client is on the shared connection");
  client.registerTool({ name: "echo", description: "Answers with its call id", handler: (_args, { callId }) => ({ answered: callId }) });
  const recoveries = [];
  const states = [];
  let lostAt = null;
  client.on("state", ({ state }) => {
    states.push(state);
    if (state === "reconnecting" && lostAt === null) lostAt = Date.now();
    if (state === "connected" && lostAt !== null) {
      recoveries.push(Date.now() - lostAt);
      lostAt = null;
    }
  });
  const cuts = [];
  client.on("cut", (cut) => cuts.push(cut));
  await client.connect();
  return { gw, proxy, client, sent, recoveries, states, cuts };
}

/** Makes a call through the gateway and returns how long it took to be answered. */
async function timedCall({ gw, client }) {
  const started = Date.now();
  const record = await gw.call(client.sessionId, "echo", {}, { timeout_ms: 20000 });
  assert.equal(record.status, "completed", JSON.stringify(record));
  assert.deepEqual(record.output, { answered: record.id });
  return Date.now() - started;
}

test("a shared stream the proxy cuts again and again reconnects at once every time", async () => {
  // Nothing learned (a storage that keeps nothing), so the proxy keeps cutting.
  const setup = await sharedBehindIdleProxy(["--heartbeat", "10s"], { pathStorage: forgetful });
  await until(() => setup.recoveries.length >= 6, 60000, "six reconnections after cuts");
  const waited = await timedCall(setup);
  assert.ok(setup.proxy.finished().filter((r) => r.path === "/v1/streams").length >= 6, "nginx cut the streams");
  // Before the shared lane reset its backoff after a live stream, the sixth
  // reconnection waited 8-16 s.
  for (const ms of setup.recoveries) assert.ok(ms < 2000, `a reconnection took ${ms} ms: ${setup.recoveries}`);
  assert.ok(setup.cuts.length >= 6, `cuts told: ${JSON.stringify(setup.cuts)}`);
  const last = setup.client.connection.last_cut;
  assert.equal(last.transport, "sse");
  assert.ok(["ended", "reset"].includes(last.reason), JSON.stringify(last));
  assert.ok(last.after_ms >= CUT_MS - 500 && last.after_ms < CUT_MS + 3000, `cut after ${last.after_ms} ms`);
  console.log(`# reconnections after cuts: ${setup.recoveries.join(", ")} ms; a call after them: ${waited} ms`);
});

test("two cuts at the same idle age make the shared stream ask for a heartbeat well below it, and the cuts stop", async () => {
  const setup = await sharedBehindIdleProxy(["--heartbeat", "10s"], { pathStorage: new MemoryStorage() });
  await until(() => setup.sent.some((r) => r.path === "/v1/streams" && r.body.heartbeat_ms !== undefined), 30000, "a stream that asks for a heartbeat");
  const asked = setup.sent.find((r) => r.body.heartbeat_ms !== undefined).body.heartbeat_ms;
  assert.ok(asked >= 1000 && asked <= 0.4 * (CUT_MS + 500), `asked ${asked} ms`);
  assert.equal(setup.cuts.length, 2, `two cuts taught it: ${JSON.stringify(setup.cuts)}`);
  await until(() => setup.client.connection.transport === "sse", 5000, "the stream back");
  assert.equal(setup.client.connection.heartbeat_ms, asked, "the gateway pings at the asked interval");
  // Silence longer than the proxy allows, twice over: pings now keep the stream.
  await new Promise((r) => setTimeout(r, 3 * CUT_MS));
  assert.equal(setup.cuts.length, 2, `no cut since: ${JSON.stringify(setup.cuts)}`);
  assert.ok((await timedCall(setup)) < 2000);
});

test("shared polls the proxy answers 504 halve their hold; every call is answered at once", async () => {
  // Streams are held back (never answered), so the lane polls; the gateway holds polls 10 s, the proxy cuts at 3 s.
  const setup = await sharedBehindIdleProxy(["--poll-wait", "10s"], { pathStorage: new MemoryStorage(), sseReadyTimeoutMs: 1000, hold: (path) => path === "/v1/streams" });
  assert.equal(setup.client.transport, "poll");
  const started = Date.now();
  const waits = [];
  // A call every 2-5 s: some arrive during a hold, some after the proxy cut one.
  for (const gap of [2000, 4500, 3000, 5000, 2500, 4000]) {
    await new Promise((r) => setTimeout(r, gap));
    waits.push(await timedCall(setup));
  }
  const holds = setup.sent.filter((r) => r.path === "/v1/poll").map((r) => r.body.wait_ms).filter((ms) => ms > 0);
  const cut = setup.proxy.finished().filter((r) => r.path === "/v1/poll" && r.status === 504);
  assert.ok(cut.length >= 1, "nginx answered a held poll 504");
  assert.equal(holds[0], 10000, `the first hold is the gateway's --poll-wait: ${holds}`);
  // The polls go one after the other, so nginx's log lists them in the order sent:
  // each poll after a 504 holds half as long as the one cut.
  const asked = setup.sent.filter((r) => r.path === "/v1/poll").map((r) => r.body.wait_ms);
  const answered = setup.proxy.finished().filter((r) => r.path === "/v1/poll");
  answered.forEach((r, i) => {
    if (r.status === 504 && i + 1 < asked.length) assert.equal(asked[i + 1], Math.max(1000, Math.floor(asked[i] / 2)), `after a 504: ${asked} / ${answered.map((x) => x.status)}`);
  });
  assert.ok(holds.some((ms) => ms < CUT_MS), `the hold went below the proxy's cut: ${holds}`);
  assert.ok(Math.min(...holds) >= 1000, `never below 1 s: ${holds}`);
  // Fewer cuts than a fixed 10 s hold (one every 3 s) would give.
  assert.ok(cut.length <= Math.ceil((Date.now() - started) / CUT_MS / 2) + 2, `${cut.length} polls cut`);
  assert.ok(Math.max(...waits) < 2000, `calls waited ${waits} ms`);
  assert.ok(!setup.states.includes("reconnecting"), `a cut poll is asked again without losing the connection: ${setup.states}`);
  assert.equal(setup.client.connection.last_cut.reason, "http_504");
  assert.equal(setup.client.connection.last_cut.transport, "poll");
  console.log(`# holds asked: ${holds.join(", ")}; ${cut.length} polls cut; ${waits.length} calls, the longest ${Math.max(...waits)} ms`);
});

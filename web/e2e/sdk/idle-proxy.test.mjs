// The browser SDK behind nginx that cuts connections silent for 3 s
// (proxy_read_timeout 3s, proxy_buffering off): with a gateway heartbeat of
// 1 s the stream stays up; with 10 s nginx cuts the idle stream and the SDK
// reconnects promptly each time, however many cuts it has lived through,
// and, learning the path, asks for a heartbeat below the cut after two of
// them; polls held 10 s are answered 504 by nginx, and the SDK halves its
// hold and polls again without spinning or losing the connection. Every
// call is answered, by exactly one run of the tool.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage, ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { startIdleCuttingProxy } from "../lib/nginx.mjs";
import { nextEvent, until } from "../lib/wait.mjs";

const CUT_MS = 3000;
/** A storage that keeps nothing (a private window's): the path is never learned. */
const forgetful = { getItem: () => null, setItem: () => {}, removeItem: () => {} };
const running = [];
after(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

/** A gateway started with `args`, nginx cutting idle connections in front of it, and a client of the proxy. */
async function behindIdleProxy(args, clientOptions) {
  const gw = await startGateway({ args });
  running.push(() => gw.stop());
  const proxy = await startIdleCuttingProxy(gw.hostPort, { readTimeout: `${CUT_MS / 1000}s` });
  running.push(() => proxy.stop());
  const client = new ToolgateClient({ baseUrl: proxy.url, storage: null, pathStorage: new MemoryStorage(), ...clientOptions });
  running.push(() => client.close());
  const runs = new Map();
  client.registerTool({
    name: "echo",
    description: "Answers with its call id",
    handler: (_args, { callId }) => {
      runs.set(callId, (runs.get(callId) ?? 0) + 1);
      return { answered: callId };
    },
  });
  // Every time the client goes from "reconnecting" back to "connected".
  const recoveries = [];
  const states = [];
  const cuts = [];
  client.on("cut", (cut) => cuts.push(cut));
  let lostAt = null;
  client.on("state", ({ state }) => {
    states.push(state);
    if (state === "reconnecting" && lostAt === null) lostAt = Date.now();
    if (state === "connected" && lostAt !== null) {
      recoveries.push(Date.now() - lostAt);
      lostAt = null;
    }
  });
  await client.connect();
  return { gw, proxy, client, runs, recoveries, states, cuts };
}

/** Makes three calls at once, as a caller does (straight to the gateway); each must be answered by one run. */
async function threeCalls({ gw, client, runs }) {
  const records = await Promise.all([0, 1, 2].map((i) => gw.call(client.sessionId, "echo", { i }, { timeout_ms: 20000 })));
  for (const record of records) {
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.deepEqual(record.output, { answered: record.id });
    assert.equal(runs.get(record.id), 1, `call ${record.id} ran ${runs.get(record.id)} times`);
  }
}

const idle = (ms) => new Promise((r) => setTimeout(r, ms));

test("a heartbeat shorter than the proxy's cut keeps the stream up", async () => {
  const setup = await behindIdleProxy(["--heartbeat", "1s"], { transport: "sse" });
  for (let round = 0; round < 2; round++) {
    await idle(CUT_MS + 1000); // silence longer than the proxy allows
    await threeCalls(setup);
  }
  const streams = setup.proxy.finished().filter((r) => r.path.endsWith("/events"));
  assert.equal(streams.length, 0, `nginx ended stream requests: ${JSON.stringify(streams)}`);
  assert.deepEqual(setup.recoveries, [], "the client never had to reconnect");
});

test("a stream the proxy cuts again and again is reconnected promptly each time, and every call is answered", async () => {
  // Nothing learned (a storage that keeps nothing), so nginx keeps cutting.
  const setup = await behindIdleProxy(["--heartbeat", "10s"], { transport: "sse", pathStorage: forgetful });
  // Five cuts: the reconnection delay must not grow with each (the
  // default backoff would reach 4–8 s by the fifth).
  await until(() => setup.recoveries.length >= 5, 40000, "five reconnections after cuts");
  await threeCalls(setup);
  const cut = setup.proxy.finished().filter((r) => r.path.endsWith("/events"));
  assert.ok(cut.length >= 5, `nginx cut ${cut.length} streams`);
  for (const ms of setup.recoveries) assert.ok(ms < 2000, `a reconnection took ${ms} ms: ${setup.recoveries}`);
});

test("two cuts at the same idle age make the stream ask for a heartbeat below it, and the cuts stop", async () => {
  const setup = await behindIdleProxy(["--heartbeat", "10s"], { transport: "sse" });
  await until(() => setup.cuts.length >= 2 && (setup.client.connection.heartbeat_ms ?? CUT_MS) < CUT_MS, 30000, "a stream with a shorter heartbeat");
  const asked = setup.client.connection.heartbeat_ms;
  assert.ok(asked >= 1000 && asked <= 0.4 * (CUT_MS + 500), `heartbeat ${asked} ms`);
  const streams = setup.proxy.finished().filter((r) => r.path.endsWith("/events")).length;
  await idle(3 * CUT_MS);
  assert.equal(setup.cuts.length, 2, `no cut since: ${JSON.stringify(setup.cuts)}`);
  assert.equal(setup.proxy.finished().filter((r) => r.path.endsWith("/events")).length, streams, "nginx cut no stream since");
  await threeCalls(setup);
});

test("polls held longer than the proxy's cut are answered 504; the client halves its hold and polls on, and every call is answered", async () => {
  const setup = await behindIdleProxy([], { transport: "poll", pollWaitMs: 10000 });
  const started = Date.now();
  await until(() => setup.cuts.length >= 2, 30000, "two polls cut");
  await threeCalls(setup);
  await idle(2 * CUT_MS);
  await threeCalls(setup);
  const polls = setup.proxy.finished().filter((r) => r.path.endsWith("/poll"));
  const cut = polls.filter((r) => r.status === 504);
  assert.ok(cut.length >= 2, `polls: ${JSON.stringify(polls)}`);
  // The holds went 10 s, 5 s, 2.5 s: below the cut, so later polls are answered by the gateway.
  assert.ok(polls.some((r) => r.status === 200 && r.seconds >= 2), `a held poll below the cut ran its hold: ${JSON.stringify(polls)}`);
  assert.equal(setup.client.connection.last_cut.reason, "http_504");
  assert.ok(!setup.states.includes("reconnecting"), `a cut poll is asked again without losing the connection: ${setup.states}`);
  // A client that spun would send many more polls.
  const limit = 4 * Math.ceil((Date.now() - started) / CUT_MS) + 8;
  assert.ok(polls.length <= limit, `${polls.length} polls in ${Date.now() - started} ms: the client spins`);
});

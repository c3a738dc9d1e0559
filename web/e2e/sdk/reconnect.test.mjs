// The reconnect policy, the bound on transport switches and the path memory
// of the browser SDK (toolgate-reconnect.js, toolgate-path.js), driven with
// a fake clock and fake randomness; the Retry-After of a real reply.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { MemoryStorage, ToolgateError } from "../../static/toolgate.js";
import { requestJSON } from "../../static/toolgate-http.js";
import { MAX_SWITCHES, ReconnectPolicy, SWITCH_WINDOW_MS, TransportSwitches, retryAfterMs } from "../../static/toolgate-reconnect.js";
import { HEARTBEAT_KEPT_MS, PathMemory } from "../../static/toolgate-path.js";
import { pollCutReason } from "../../static/toolgate-lane.js";

const top = () => 0.999999; // the largest wait full jitter can give

test("attempts that never went live back off 250 ms * 2^(n-1) up to 10 s; a live one that broke reconnects within 250 ms", () => {
  const policy = new ReconnectPolicy({ random: top });
  const waits = [];
  for (let i = 0; i < 8; i++) waits.push(policy.delay(new ToolgateError("NETWORK", "refused")));
  assert.deepEqual(waits, [250, 500, 1000, 2000, 4000, 8000, 10000, 10000]);

  // It went live: the failures are forgotten, and the break waits only the jitter.
  policy.live();
  assert.equal(policy.delay(new ToolgateError("STREAM_ENDED", "cut")), 250);
  assert.equal(policy.failures, 0);
  // Cut after cut, each time after going live: never more than the jitter.
  for (let i = 0; i < 20; i++) {
    policy.live();
    assert.ok(policy.delay(new ToolgateError("NETWORK", "cut")) <= 250);
  }
  // The attempt after a live one that fails again starts the backoff from its first step.
  assert.equal(policy.delay(new ToolgateError("NETWORK", "refused")), 250);

  const low = new ReconnectPolicy({ random: () => 0 });
  assert.equal(low.delay(new ToolgateError("NETWORK", "x")), 0, "full jitter reaches zero");
});

test("a Retry-After is the least wait, live or not; a replaced connection backs off", () => {
  const policy = new ReconnectPolicy({ random: () => 0.5 });
  policy.live();
  assert.equal(policy.delay(new ToolgateError("UNAVAILABLE", "busy", { status: 503, retryAfterMs: 3000 })), 3000);
  assert.equal(policy.delay(new ToolgateError("RATE_LIMITED", "slow down", { status: 429, retryAfterMs: 2000 })), 2000);
  // A Retry-After shorter than the backoff does not shorten it.
  const later = new ReconnectPolicy({ random: top });
  for (let i = 0; i < 5; i++) later.delay(new ToolgateError("NETWORK", "x"));
  assert.equal(later.delay(new ToolgateError("UNAVAILABLE", "busy", { status: 503, retryAfterMs: 1000 })), 8000);

  const replaced = new ReconnectPolicy({ random: top });
  const waits = [];
  for (let i = 0; i < 3; i++) {
    replaced.live();
    waits.push(replaced.delay(new ToolgateError("STREAM_REPLACED", "newer")));
  }
  assert.deepEqual(waits, [250, 500, 1000], "replacements in a row back off although each went live");
});

test("Retry-After is read as seconds or as an HTTP date, from a real reply", async () => {
  const now = Date.parse("2026-11-27T12:00:00Z");
  assert.equal(retryAfterMs("7", now), 7000);
  assert.equal(retryAfterMs("Fri, 27 Nov 2026 12:00:05 GMT", now), 5000);
  assert.equal(retryAfterMs("Fri, 27 Nov 2026 11:59:00 GMT", now), undefined, "a date past");
  for (const bad of ["", "-3", "1.5", "soon", undefined, "0"]) assert.equal(retryAfterMs(bad, now), undefined, String(bad));

  const when = new Date(Date.now() + 4000).toUTCString();
  const server = createServer((req, res) => {
    res.writeHead(503, { "Content-Type": "application/json", "Retry-After": req.url === "/date" ? when : "2" });
    res.end(JSON.stringify({ error: { code: "UNAVAILABLE", message: "draining" } }));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    const base = `http://127.0.0.1:${server.address().port}`;
    const seconds = await requestJSON(fetch, `${base}/s`).catch((e) => e);
    assert.equal(seconds.status, 503);
    assert.equal(seconds.retryAfterMs, 2000);
    const date = await requestJSON(fetch, `${base}/date`).catch((e) => e);
    assert.ok(date.retryAfterMs > 2000 && date.retryAfterMs <= 4000, `from the date: ${date.retryAfterMs}`);
  } finally {
    server.close();
  }
});

test("switches are bounded: at most MAX_SWITCHES in the window, climbing only while a fall back still fits", () => {
  let now = 0;
  const switches = new TransportSwitches({ probeMs: 60000, probeMaxMs: 600000, now: () => now });
  assert.ok(switches.mayClimb());
  let made = 0;
  // A path that flaps: every climb is followed by a fall back.
  for (let minute = 0; minute < 10; minute++) {
    now = minute * 60000;
    if (switches.mayClimb()) {
      switches.switched(); // up
      switches.switched(); // and down again
      made += 2;
    }
  }
  assert.ok(made <= MAX_SWITCHES, `${made} switches in 10 minutes`);
  assert.equal(switches.mayClimb(), false);
  now += SWITCH_WINDOW_MS;
  assert.ok(switches.mayClimb(), "the window moves on");

  // Probes back off x2 after each failure, up to the cap, and start over once a stream worked.
  const delays = [];
  for (let i = 0; i < 6; i++) {
    delays.push(switches.probeDelayMs);
    switches.probeFailed();
  }
  assert.deepEqual(delays, [60000, 120000, 240000, 480000, 600000, 600000]);
  switches.streamWorked();
  assert.equal(switches.probeDelayMs, 60000);
});

test("two idle cuts at a similar age ask for a heartbeat well below it, kept per origin for every tab", () => {
  let now = 1_000_000;
  const storage = new MemoryStorage();
  const tabA = new PathMemory({ baseUrl: "https://gw.example", storage, now: () => now });
  const tabB = new PathMemory({ baseUrl: "https://gw.example", storage, now: () => now });
  const other = new PathMemory({ baseUrl: "https://other.example", storage, now: () => now });
  assert.equal(tabA.heartbeatMs, null);

  assert.equal(tabA.streamCut(10_200, 15000), null, "one cut teaches nothing");
  now += 11_000;
  assert.equal(tabA.streamCut(9_900, 15000), 3960, "0.4 x the smaller idle time");
  assert.equal(tabB.heartbeatMs, 3960, "the other tab of the origin asks it too");
  assert.equal(other.heartbeatMs, null, "another gateway's path is its own");

  // Cuts that a shorter heartbeat does not prevent change nothing: one
  // after a ping was due (idle beyond the heartbeat), one too quick to be
  // an idle cut, and two that are not alike.
  const fresh = new PathMemory({ baseUrl: "https://x.example", storage: new MemoryStorage(), now: () => now });
  assert.equal(fresh.streamCut(20_000, 15000), null);
  assert.equal(fresh.streamCut(20_000, 15000), null);
  assert.equal(fresh.streamCut(400, 15000), null);
  assert.equal(fresh.streamCut(400, 15000), null);
  assert.equal(fresh.streamCut(4_000, 15000), null);
  assert.equal(fresh.streamCut(9_000, 15000), null);
  assert.equal(fresh.heartbeatMs, null);
  // A pair split by a cut of another kind is no pair.
  const split = new PathMemory({ baseUrl: "https://s.example", storage: new MemoryStorage(), now: () => now });
  assert.equal(split.streamCut(8_000, 15000), null);
  assert.equal(split.streamCut(20_000, 15000), null);
  assert.equal(split.streamCut(8_000, 15000), null);
  assert.equal(split.heartbeatMs, null);

  // Never below 1 s; never raised by a later pair; forgotten after a day.
  const short = new PathMemory({ baseUrl: "https://y.example", storage: new MemoryStorage(), now: () => now });
  short.streamCut(1_500, 15000);
  assert.equal(short.streamCut(1_600, 15000), 1000);
  short.streamCut(5_000, 15000);
  assert.equal(short.streamCut(5_000, 15000), null);
  assert.equal(short.heartbeatMs, 1000);
  now += HEARTBEAT_KEPT_MS + 1;
  assert.equal(short.heartbeatMs, null);
});

test("a held poll cut halves the hold down to 1 s; clean full holds grow it back x1.25 to the ceiling", () => {
  const path = new PathMemory({ baseUrl: "https://gw.example", storage: new MemoryStorage() });
  assert.equal(path.pollHoldMs(25000), 25000, "the gateway's poll wait until a cut");
  const holds = [];
  for (let i = 0; i < 6; i++) holds.push(path.pollCut(path.pollHoldMs(25000)));
  assert.deepEqual(holds, [12500, 6250, 3125, 1562, 1000, 1000]);
  const grown = [];
  for (let i = 0; i < 3; i++) {
    path.pollClean(25000);
    grown.push(path.pollHoldMs(25000));
  }
  assert.deepEqual(grown, [1250, 1563, 1954]);
  for (let i = 0; i < 30; i++) path.pollClean(25000);
  assert.equal(path.pollHoldMs(25000), 25000, "back to the ceiling");
  assert.equal(path.pollHoldMs(5000), 5000, "never beyond a lower ceiling (a page's, or a gateway's shorter --poll-wait)");

  // Which failures of a held poll are cuts.
  const gw504 = new ToolgateError("HTTP_504", "Gateway Time-out", { status: 504 });
  const typeError = new ToolgateError("NETWORK", "Failed to fetch", { status: 0 });
  assert.equal(pollCutReason(gw504, 10000, 8000, false), "http_504");
  assert.equal(pollCutReason(typeError, 10000, 8000, false), "reset", "a 504 without CORS headers is a TypeError in a browser");
  assert.equal(pollCutReason(typeError, 10000, 30, false), null, "refused at once: the gateway is down, not a cut");
  assert.equal(pollCutReason(gw504, 0, 8000, false), null, "an unheld poll");
  assert.equal(pollCutReason(typeError, 10000, 25000, true), "timeout");
  assert.equal(pollCutReason(new ToolgateError("UNAUTHENTICATED", "bad", { status: 401 }), 10000, 8000, false), null);
});

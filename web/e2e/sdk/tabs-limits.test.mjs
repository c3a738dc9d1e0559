// The leading tab's connection against the gateway's limit of sessions per
// stream (--max-sessions-per-stream, default 64), with the fakes of
// lib/tab-fakes.mjs: more sessions than the limit are split over several
// streams; a join refused with 409 moves that one session to another stream
// and disturbs no other; a limit lower than the default, learned from a 400
// on the open, splits the sessions at once. Against the real gateway the
// same is shown by sdk/tabs-gateway.test.mjs.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { until } from "../lib/wait.mjs";
import { member, tabFixture } from "../lib/tab-fakes.mjs";

const { page, browser } = tabFixture(afterEach);
const live = (m) => m.statuses.at(-1) === "sse";
const opens = (shared) => shared.gateway.requests.filter((r) => r.method === "POST" && r.path === "/v1/streams");

test("70 sessions joining a live stream: the 65th goes to a second stream, the first stream stays, every session is live", async () => {
  const shared = browser({ limit: 64 });
  const [a, b, c] = [page(shared), page(shared), page(shared)];
  const ma = member("S00");
  a.attach(ma);
  await until(() => live(ma), 3000, "the leader's session live");
  const others = [];
  for (let i = 1; i < 70; i++) {
    const m = member(`S${String(i).padStart(2, "0")}`);
    others.push(m);
    (i % 2 ? b : c).attach(m);
  }
  await until(() => others.every(live), 8000, "all 70 sessions live");

  const streams = shared.gateway.streams;
  assert.equal(streams.length, 2, "two streams");
  assert.equal(streams[0].aborted, false, "the first stream was never reopened");
  assert.ok(streams.every((s) => s.sessions.length <= 64), `sessions per stream: ${streams.map((s) => s.sessions.length)}`);
  assert.equal(streams[0].sessions.length + streams[1].sessions.length, 70);
  assert.ok(!opens(shared).some((r) => r.body.sessions.length > 64), "no open carried more than the limit");
  const conflicts = shared.gateway.requests.filter((r) => r.status === 409).length;
  assert.ok(conflicts <= 1, `at most the one join past the limit was refused (${conflicts})`);

  // An event on each stream reaches the page that owns its session.
  const last = others.at(-1);
  const onSecond = streams[1].sessions[0];
  const target = others.find((m) => m.sessionId === onSecond) ?? ma;
  streams[0].event("S01", 1, { type: "tool_call_request", id: "C1", name: "t", args: {} });
  streams[1].event(onSecond, 1, { type: "tool_call_request", id: "C2", name: "t", args: {} });
  await until(() => others[0].events.some((e) => e.id === "C1") && target.events.some((e) => e.id === "C2"), 2000, "both events delivered");
  assert.ok(live(last) && live(ma));
});

test("a join refused with 409 (the stream is full) moves that session to a new stream; the full stream and its sessions carry on", async () => {
  const shared = browser({ limit: 4 });
  const [a, b] = [page(shared), page(shared)];
  const ma = member("S0");
  a.attach(ma);
  await until(() => live(ma), 3000, "the leader's session live");
  const joiners = Array.from({ length: 6 }, (_, i) => member(`J${i}`));
  for (const m of joiners) b.attach(m);
  await until(() => joiners.every(live), 5000, "all 6 joiners live");
  const [first, ...rest] = shared.gateway.streams;
  assert.equal(first.aborted, false, "the full stream was not reopened");
  assert.equal(first.sessions.length, 4);
  assert.equal(rest.length, 1, "one more stream");
  assert.deepEqual([...first.sessions, ...rest[0].sessions].sort(), ["J0", "J1", "J2", "J3", "J4", "J5", "S0"]);
  assert.ok(!opens(shared).some((r) => r.status === 400), "no open refused");
});

test("a gateway with a lower limit answers the open with 400: the sessions are split into streams of that many, no endless retry", async () => {
  const shared = browser({ limit: 4 });
  const a = page(shared);
  const members = Array.from({ length: 10 }, (_, i) => member(`S${i}`));
  for (const m of members) a.attach(m); // all in the leader's first open
  await until(() => members.every(live), 5000, "all 10 sessions live");
  const refusedOpens = shared.gateway.requests.filter((r) => r.path === "/v1/streams" && r.status === 400);
  assert.equal(refusedOpens.length, 1, "one open was refused, then the limit was known");
  const liveStreams = shared.gateway.streams.filter((s) => !s.aborted);
  assert.equal(liveStreams.length, 3, "10 sessions over 3 streams of at most 4");
  assert.ok(liveStreams.every((s) => s.sessions.length <= 4));
  assert.deepEqual(liveStreams.flatMap((s) => s.sessions).sort(), members.map((m) => m.sessionId).sort());

  // Later sessions fill the streams with room, then make a new one; none is refused.
  const more = Array.from({ length: 3 }, (_, i) => member(`T${i}`));
  for (const m of more) a.attach(m);
  await until(() => more.every(live), 3000, "3 more live");
  assert.equal(shared.gateway.requests.filter((r) => r.status === 409).length, 0, "no join past the limit");
  assert.ok(shared.gateway.streams.filter((s) => !s.aborted).every((s) => s.sessions.length <= 4));
});

test("a stream left with no session goes, and no stream is opened with none", async () => {
  const shared = browser({ limit: 2 });
  const [a, b] = [page(shared), page(shared)];
  const leaderMember = member("S0");
  a.attach(leaderMember);
  await until(() => live(leaderMember), 3000, "the leader's session live");
  const members = [member("S1"), member("S2"), member("S3")];
  const handles = members.map((m) => b.attach(m));
  await until(() => members.every(live), 5000, "all live");
  const second = shared.gateway.streams.find((s) => !s.aborted && s.sessions.includes("S3"));
  assert.ok(second && second !== shared.gateway.streams[0]);
  const gone = second.sessions.map((id) => members.findIndex((m) => m.sessionId === id));
  for (const i of gone) handles[i].detach();
  await until(() => second.aborted, 3000, "the emptied stream was let go");
  handles.forEach((h) => h.detach());
  await new Promise((r) => setTimeout(r, 1500));
  assert.ok(opens(shared).every((r) => r.body.sessions.length > 0), "no open without sessions");
  assert.equal(shared.gateway.streams[0].aborted, false, "the leader's stream carries on");
});

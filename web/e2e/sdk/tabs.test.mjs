// The tab coordinator (web/static/toolgate-tabs.js) in Node, with fakes of
// what a browser gives it: a Web Locks manager, a BroadcastChannel between
// "pages" that a test can silence, and a gateway's multi-session stream
// whose events the test writes. It shows the election, the relay of each
// event to the page that owns the session, a join after the stream opened,
// the hand-over when the leader freezes, and the steal from a silent leader
// with everyone's cursors. The browser end of the same is
// browser/manytabs.test.mjs.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { until } from "../lib/wait.mjs";
import { member, tabFixture } from "../lib/tab-fakes.mjs";

const { page, browser } = tabFixture(afterEach);

const live = (m) => m.statuses.at(-1) === "sse";

test("the first page leads with one stream for every page's session; each event reaches the page that owns its session", async () => {
  const shared = browser();
  const [a, b] = [page(shared), page(shared)];
  const [ma, mb] = [member("SA"), member("SB")];
  a.attach(ma);
  await until(() => a.leading, 2000, "page A leads");
  b.attach(mb);
  await until(() => live(ma) && live(mb), 3000, "both sessions live");
  assert.equal(b.leading, false);
  const opens = shared.gateway.requests.filter((r) => r.path === "/v1/streams");
  assert.equal(opens.length, 1, "one stream");

  // B came within the leader's gathering time (in the open) or after it (a join): either way no cursor.
  const sentB = opens[0].body.sessions.find((s) => s.session_id === "SB") ?? shared.gateway.requests.find((r) => r.body?.session_id === "SB")?.body;
  assert.deepEqual(sentB, { session_id: "SB", token: "tgs_SB" });

  const [stream] = shared.gateway.streams;
  stream.event("SB", 3, { type: "tool_call_request", id: "C1", name: "t", args: {} });
  stream.event("SA", 7, { type: "tool_call_request", id: "C2", name: "t", args: {} });
  await until(() => ma.events.length === 1 && mb.events.length === 1, 2000, "each page got its event");
  assert.equal(mb.events[0].id, "C1");
  assert.equal(ma.events[0].id, "C2");

  // A third session, announced after the stream opened, joins it with its token in the body.
  const mc = member("SC", 12);
  b.attach(mc);
  await until(() => live(mc), 2000, "SC live");
  const joinRequest = shared.gateway.requests.find((r) => r.path === `/v1/streams/${stream.id}/sessions`);
  assert.deepEqual(joinRequest.body, { session_id: "SC", token: "tgs_SC", cursor: 12 });
  assert.equal(joinRequest.authorization, undefined, "the token travels in the body");
});

test("a leader that freezes hands over at once; the new stream carries every session's cursor", async () => {
  const shared = browser();
  const leaderPage = new EventTarget();
  const [a, b] = [page(shared, { page: leaderPage }), page(shared)];
  const [ma, mb] = [member("SA"), member("SB")];
  a.attach(ma);
  await until(() => a.leading, 2000, "page A leads");
  b.attach(mb);
  await until(() => live(mb), 3000, "SB live");
  shared.gateway.streams[0].event("SB", 5, { type: "tool_call_request", id: "C1", name: "t", args: {} });
  await until(() => mb.events.length === 1, 2000, "SB got its call");

  const frozenAt = Date.now();
  leaderPage.dispatchEvent(new Event("freeze"));
  await until(() => b.leading, 2000, "page B leads");
  await until(() => shared.gateway.streams.length === 2 && live(mb), 2000, "B's stream is live");
  const tookMs = Date.now() - frozenAt;
  assert.ok(shared.gateway.streams[0].aborted, "the frozen leader's stream was let go");
  assert.deepEqual(shared.gateway.streams[1].opened.find((s) => s.session_id === "SB"), { session_id: "SB", token: "tgs_SB", cursor: 5 });
  assert.ok(tookMs < 1500, `taken over in ${tookMs} ms`);
  console.log(`# after a freeze, the new leader's stream was live in ${tookMs} ms`);
});

test("a silent leader loses the lock to a page that probed it, and its page joins the new stream when it hears again", async () => {
  const shared = browser();
  const [a, b] = [page(shared), page(shared)];
  const [ma, mb] = [member("SA"), member("SB")];
  a.attach(ma);
  await until(() => a.leading, 2000, "page A leads");
  b.attach(mb);
  await until(() => live(ma) && live(mb), 3000, "both live");
  shared.gateway.streams[0].event("SA", 2, { type: "tool_call_request", id: "C1", name: "t", args: {} });
  shared.gateway.streams[0].event("SB", 9, { type: "tool_call_request", id: "C2", name: "t", args: {} });
  await until(() => ma.events.length === 1 && mb.events.length === 1, 2000, "both got their call");

  // A hangs: it says nothing and hears nothing, yet holds the lock.
  const [channelA] = shared.channels.open;
  channelA.muted = true;
  const silentAt = Date.now();
  await until(() => b.leading, 6000, "page B took the lock");
  const tookMs = Date.now() - silentAt;
  assert.ok(tookMs >= 3000, `B waited for the leader's silence (${tookMs} ms)`);
  await until(() => shared.gateway.streams.length === 2, 2000, "B opened a stream");
  assert.deepEqual(shared.gateway.streams[1].opened, [{ session_id: "SB", token: "tgs_SB", cursor: 9 }]);
  console.log(`# a silent leader lost the lock after ${tookMs} ms`);

  // A wakes: its lock is gone, so it stops leading and lets its stream go,
  // and its session joins B's stream with A's cursor.
  channelA.muted = false;
  await until(() => !a.leading && shared.gateway.streams[0].aborted, 2000, "A stepped down");
  await until(() => shared.gateway.streams[1].sessions.includes("SA") && live(ma), 5000, "SA joined B's stream");
  const join = shared.gateway.requests.find((r) => r.method === "POST" && r.path === `/v1/streams/${shared.gateway.streams[1].id}/sessions`);
  assert.deepEqual(join.body, { session_id: "SA", token: "tgs_SA", cursor: 2 });

  // Events of A's session reach A from B's stream.
  shared.gateway.streams[1].event("SA", 3, { type: "tool_call_request", id: "C3", name: "t", args: {} });
  await until(() => ma.events.some((e) => e.id === "C3"), 2000, "A got C3 through B");
});

// The messages between pages, with the fakes of lib/tab-fakes.mjs: `leader`
// messages carry a term, so a page ignores a leader whose lock was taken
// (a lower term) and a leader that hears a higher term steps down; messages
// of the wrong form are ignored without an exception.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { until } from "../lib/wait.mjs";
import { BASE, member, tabFixture } from "../lib/tab-fakes.mjs";

const { page, browser } = tabFixture(afterEach);
const live = (m) => m.statuses.at(-1) === "sse";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Two pages, A leading, both sessions live; and a raw channel to post anything on. */
async function twoPages() {
  const shared = browser();
  const [a, b] = [page(shared), page(shared)];
  const [ma, mb] = [member("SA"), member("SB")];
  a.attach(ma);
  await until(() => a.leading, 2000, "A leads");
  b.attach(mb);
  await until(() => live(ma) && live(mb), 3000, "both live");
  const raw = new shared.channels.Channel(`toolgate:${BASE}`);
  afterEach(() => raw.close());
  return { shared, a, b, ma, mb, raw };
}

test("a leader of an older term (its lock taken) is not heard: the statuses do not flap; a higher term makes the leader step down", async () => {
  const { shared, a, b, mb, raw } = await twoPages();
  const statusesBefore = mb.statuses.length;
  // The stale leader says it carries nothing, over and over.
  for (let i = 0; i < 5; i++) {
    raw.postMessage({ type: "leader", from: "stale-page", term: { n: 0, page: "stale-page" }, transport: null, joined: [], live: {}, known: [] });
    await sleep(100);
  }
  await sleep(300);
  assert.equal(mb.statuses.length, statusesBefore, `B's status did not change: ${mb.statuses}`);
  assert.ok(live(mb));

  // A page with a later term: A steps down at once (its stream goes), and
  // the page that leads next takes a term above it.
  const terms = [];
  raw.onmessage = ({ data }) => data.type === "leader" && terms.push(data.term.n);
  raw.postMessage({ type: "leader", from: "later-page", term: { n: 1000, page: "later-page" }, transport: null, joined: [], live: {}, known: [] });
  await until(() => shared.gateway.streams[0].aborted, 1000, "A stepped down and let its stream go");
  await until(() => terms.some((n) => n > 1000) && (a.leading || b.leading), 3000, "a page leads with a later term");
  await until(() => live(mb), 3000, "SB live again");
});

test("malformed messages are ignored without an exception", async () => {
  const { shared, a, mb, ma, raw } = await twoPages();
  const thrown = [];
  const onError = (error) => thrown.push(error);
  process.on("uncaughtException", onError);
  try {
    const junk = [
      null,
      42,
      "leader",
      [],
      { type: "join" },
      { type: "join", from: 7, sessionId: "SX", token: "t" },
      { type: "join", from: "x", sessionId: 5, token: {} },
      { type: "join", from: "x", sessionId: "SY", token: "t", cursor: "12" },
      { type: "leave", from: "x", sessionId: { id: "SB" } },
      { type: "event", from: "x", sessionId: "SB", event: null },
      { type: "event", from: "x", sessionId: "SA", event: "tool_call_request" },
      { type: "event", from: "x", sessionId: "SB", event: { id: "C9" } },
      { type: "leader", from: "x", term: "99" },
      { type: "leader", from: "x", term: { n: 99, page: "x" }, known: "SB", live: 5 },
      { type: "leader", from: "x" },
      { type: "refused", from: "x", to: 3, sessionId: "SB", error: 5 },
      { type: "roll_call", from: {} },
      { type: "alive", from: "x", sessions: 5, term: null },
      { type: "probe" },
    ];
    for (const message of junk) raw.postMessage(message);
    await sleep(1500);
    assert.deepEqual(thrown, []);
    const opened = shared.gateway.streams[0];
    assert.ok(a.leading && !opened.aborted, "a malformed leader message, whatever its term, does not unseat the leader");
    assert.deepEqual([...opened.sessions].sort(), ["SA", "SB"], "no session added by a malformed join");
    assert.equal(shared.gateway.requests.filter((r) => r.method === "DELETE").length, 0, "none removed");
    assert.deepEqual([ma.events, mb.events], [[], []], "no malformed event delivered");
    assert.ok(live(ma) && live(mb));
  } finally {
    process.off("uncaughtException", onError);
  }
});

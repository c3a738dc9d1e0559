// A page that goes without a word (a crashed tab, or one discarded while
// frozen: no `leave`) loses its sessions from the leader's stream after
// PAGE_SILENCE_MS, so its calls wait for it instead of being sent into the
// void; pages that keep talking, and pages of earlier versions (joins
// without `keepalive`, no `alive`), keep theirs. With the fakes of
// lib/tab-fakes.mjs.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { until } from "../lib/wait.mjs";
import { BASE, member, tabFixture } from "../lib/tab-fakes.mjs";
import { PAGE_SILENCE_MS } from "../../static/toolgate-tabs.js";

const { page, browser } = tabFixture(afterEach);
const live = (m) => m.statuses.at(-1) === "sse";
const leaves = (shared) => shared.gateway.requests.filter((r) => r.method === "DELETE").map((r) => r.path.split("/").at(-1));

test("the sessions of a page that stopped talking leave the stream; a page that talks, and an earlier version's page, stay", async () => {
  const shared = browser();
  const [a, b, c] = [page(shared), page(shared), page(shared)];
  const [ma, mb, mc] = [member("SA"), member("SB"), member("SC")];
  a.attach(ma);
  await until(() => a.leading, 2000, "A leads");
  b.attach(mb);
  c.attach(mc);
  // A page of an earlier version: it joins, and never says `alive`.
  const old = new shared.channels.Channel(`toolgate:${BASE}`);
  old.postMessage({ type: "join", from: "earlier-page", sessionId: "SO", token: "tgs_SO", cursor: null });
  await until(() => live(mb) && live(mc) && shared.gateway.streams[0].sessions.includes("SO"), 3000, "all on the stream");

  // B crashes: it says nothing more, not even a leave.
  const crashedAt = Date.now();
  b.dispose();
  await until(() => leaves(shared).includes("SB"), PAGE_SILENCE_MS + 4000, "SB left the stream");
  const tookMs = Date.now() - crashedAt;
  assert.ok(tookMs >= PAGE_SILENCE_MS - 500, `not before the page's silence (${tookMs} ms)`);
  const leave = shared.gateway.requests.find((r) => r.method === "DELETE");
  assert.equal(leave.authorization, "Bearer tgs_SB", "left with the session's own token");
  assert.deepEqual(leaves(shared), ["SB"], "only the silent page's session left");
  assert.ok(live(mc) && live(ma), "the others stay live");
  assert.deepEqual(shared.gateway.streams[0].sessions.sort(), ["SA", "SC", "SO"]);
  old.close();
  console.log(`# a crashed page's session left the stream after ${tookMs} ms`);
});

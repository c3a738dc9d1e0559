// What the tabs do when the gateway cannot carry several sessions on one
// connection (with the fakes of lib/tab-fakes.mjs): a gateway without the
// multi-session endpoints (404, or 405 from a proxy) or one that refuses
// them with a 400 not about the limit sends every client of every page to
// a connection of its own (SHARING_UNAVAILABLE) after one try, and a stream
// whose sessions are all refused refuses those sessions without being
// opened again.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { until } from "../lib/wait.mjs";
import { member, tabFixture } from "../lib/tab-fakes.mjs";

const { page, browser } = tabFixture(afterEach);
const multiRequests = (shared) => shared.gateway.requests.filter((r) => r.path === "/v1/streams" || r.path === "/v1/poll");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const [what, answer] of [
  ["404 (an earlier gateway)", () => new Response("404 page not found\n", { status: 404 })],
  ["405 (a proxy that allows no POST there)", () => new Response("", { status: 405 })],
  ["400 not about the limit", () => Response.json({ error: { code: "BAD_REQUEST", message: "unknown request" } }, { status: 400 })],
]) {
  test(`an open answered ${what}: every page's clients are told SHARING_UNAVAILABLE, and nothing is tried again`, async () => {
    const shared = browser({ answerMulti: answer });
    const [a, b] = [page(shared), page(shared)];
    const [ma, mb] = [member("SA"), member("SB")];
    a.attach(ma);
    await until(() => a.leading, 2000, "A leads");
    b.attach(mb);
    await until(() => ma.refused.length && mb.refused.length, 3000, "both clients refused");
    assert.equal(ma.refused[0].code, "SHARING_UNAVAILABLE");
    assert.equal(mb.refused[0].code, "SHARING_UNAVAILABLE");
    // A client attached later on either page is sent on its own at once.
    const [laterA, laterB] = [member("SA2"), member("SB2")];
    a.attach(laterA);
    b.attach(laterB);
    await until(() => laterA.refused.length && laterB.refused.length, 1000, "later clients refused");
    assert.equal(laterB.refused[0].code, "SHARING_UNAVAILABLE");
    const tried = multiRequests(shared).length;
    await sleep(1500);
    assert.equal(multiRequests(shared).length, tried, "no retry");
    assert.ok(tried <= 2, `${tried} tries`);
  });
}

test("a stream whose every session is refused (the gateway then ends it) refuses them and is not opened again", async () => {
  const shared = browser({ refuse: ["SA"] });
  const a = page(shared);
  const ma = member("SA");
  a.attach(ma);
  await until(() => ma.refused.length, 3000, "SA refused");
  assert.equal(ma.refused[0].code, "UNAUTHENTICATED");
  await sleep(1500);
  assert.equal(shared.gateway.requests.length, 1, `nothing asked after the refusal: ${JSON.stringify(shared.gateway.requests.map((r) => [r.path, r.status]))}`);
  // A session that comes later opens a stream of its own.
  const other = member("SX");
  page(shared).attach(other);
  await until(() => other.statuses.at(-1) === "sse", 3000, "SX live");
  const opened = shared.gateway.requests.filter((r) => r.path === "/v1/streams");
  assert.equal(opened.length, 2, `one open for SA, one for SX: ${JSON.stringify(opened.map((r) => r.body))}`);
  assert.ok(opened.every((r) => r.body.sessions.length > 0));
});

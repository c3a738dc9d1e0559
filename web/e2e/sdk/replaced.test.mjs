// Two clients of one session on a gateway that keeps one stream or poll per
// session (--max-streams-per-session 1): each connection replaces the
// other's, and the SDK backs off before it reconnects instead of replacing
// the other at once, again and again.
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage, ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";

let gw;
const clients = [];
before(async () => {
  gw = await startGateway({ args: ["--max-streams-per-session", "1"] });
});
after(async () => {
  await gw?.stop();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** Fetch that counts the requests to the session's stream and poll. */
function countingFetch() {
  const counts = { connects: 0 };
  return {
    counts,
    fetch: (url, init) => {
      if (/\/(events|poll)(\?|$)/.test(String(url))) counts.connects++;
      return fetch(url, init);
    },
  };
}

for (const transport of ["poll", "sse"]) {
  test(`two ${transport} clients of one session back off when replaced`, async () => {
    const storage = new MemoryStorage();
    const net = countingFetch();
    const opts = { baseUrl: gw.url, storage, storageKey: "toolgate:replaced", transport, fetch: net.fetch, reconnectBaseMs: 200, reconnectMaxMs: 1000, pollWaitMs: 5000 };
    const first = new ToolgateClient(opts);
    clients.push(first);
    await first.connect();
    const second = new ToolgateClient(opts);
    clients.push(second);
    const replaced = [];
    for (const c of [first, second]) c.on("error", ({ error }) => error.code === "STREAM_REPLACED" && replaced.push(error));
    await second.connect();
    assert.equal(second.sessionId, first.sessionId, "both clients use the stored session");
    const startCount = net.counts.connects;
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the window the reconnects are counted in
    const connects = net.counts.connects - startCount;
    assert.ok(replaced.length > 0, "a client was told it was replaced");
    // Backing off (200 ms, doubling to 1 s), the two make a handful of
    // connects in 2 s; reconnecting at once they made thousands.
    assert.ok(connects < 40, `${connects} connects in 2 s`);
  });
}

// The browser SDK's stream probe (probeStream, toolgate-transport.js)
// against the real gateway's GET /v1/sessions/{sid}/probe: straight to it
// the path streams; through a real buffering nginx it does not; a second
// probe while one runs is "busy"; a gateway without the probe (404) is
// "unknown", so the SDK falls back to trying the stream itself.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { probeStream } from "../../static/toolgate-transport.js";
import { startGateway } from "../lib/gateway.mjs";
import { startBufferingProxy } from "../lib/nginx.mjs";

let gw;
let session;
before(async () => {
  gw = await startGateway();
  const res = await fetch(`${gw.url}/v1/sessions`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ client: { name: "probe-test" } }) });
  const body = await res.json();
  session = { sessionId: body.session_id, token: body.token };
});
after(async () => {
  await gw?.stop();
});

test("straight to the gateway the path streams; through a buffering nginx it does not", async () => {
  assert.equal(await probeStream({ fetchFn: fetch, baseUrl: gw.url, ...session }), "streams");
  const proxy = await startBufferingProxy(gw.hostPort);
  try {
    assert.equal(await probeStream({ fetchFn: fetch, baseUrl: proxy.url, ...session }), "buffered");
  } finally {
    await proxy.stop();
  }
});

test("a probe while one of the session runs is busy; a wrong token is an error", async () => {
  const first = probeStream({ fetchFn: fetch, baseUrl: gw.url, ...session });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await probeStream({ fetchFn: fetch, baseUrl: gw.url, ...session }), "busy");
  assert.equal(await first, "streams");
  await assert.rejects(probeStream({ fetchFn: fetch, baseUrl: gw.url, sessionId: session.sessionId, token: "tgs_wrong" }), (err) => err.status === 401);
});

test("a gateway without the probe is unknown; one that never answers is buffered after the timeout", async () => {
  const server = createServer((req, res) => {
    if (req.url.endsWith("/probe") && req.headers.authorization === "Bearer hang") return; // never answers
    res.writeHead(404, { "Content-Type": "text/plain" });
    res.end("404 page not found\n");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    assert.equal(await probeStream({ fetchFn: fetch, baseUrl: base, sessionId: "S1", token: "t" }), "unknown");
    const started = Date.now();
    assert.equal(await probeStream({ fetchFn: fetch, baseUrl: base, sessionId: "S1", token: "hang", timeoutMs: 500 }), "buffered");
    assert.ok(Date.now() - started < 5000);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

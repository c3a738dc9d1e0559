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
import { TabCoordinator } from "../../static/toolgate-tabs.js";
import { until } from "../lib/wait.mjs";

const BASE = "http://gateway.test";

/** A Web Locks manager (exclusive locks, waiting in line, signal and steal) shared by the fake pages. */
class FakeLocks {
  #holders = new Map();
  #queues = new Map();

  request(name, options, callback) {
    return new Promise((resolve, reject) => {
      const request = { callback, resolve, reject };
      if (options.steal) {
        const holder = this.#holders.get(name);
        if (holder) holder.reject(new DOMException("The lock was stolen", "AbortError"));
        this.#grant(name, request);
        return;
      }
      if (options.signal) {
        options.signal.addEventListener("abort", () => {
          const queue = this.#queues.get(name) ?? [];
          const at = queue.indexOf(request);
          if (at === -1) return;
          queue.splice(at, 1);
          reject(new DOMException("The request was aborted", "AbortError"));
        });
      }
      if (!this.#holders.has(name)) this.#grant(name, request);
      else this.#queue(name).push(request);
    });
  }

  #queue(name) {
    if (!this.#queues.has(name)) this.#queues.set(name, []);
    return this.#queues.get(name);
  }

  #grant(name, request) {
    this.#holders.set(name, request);
    Promise.resolve(request.callback({ name, mode: "exclusive" })).then(
      (value) => this.#done(name, request, () => request.resolve(value)),
      (error) => this.#done(name, request, () => request.reject(error)),
    );
  }

  #done(name, request, settle) {
    if (this.#holders.get(name) !== request) return; // stolen: already rejected
    settle();
    this.#holders.delete(name);
    const next = this.#queue(name).shift();
    if (next) this.#grant(name, next);
  }
}

/** BroadcastChannels between the fake pages of one test; a muted channel neither sends nor receives. */
function fakeChannels() {
  const open = [];
  class Channel {
    onmessage = null;
    muted = false;
    constructor(name) {
      this.name = name;
      open.push(this);
    }
    postMessage(message) {
      if (this.muted) return;
      const copy = structuredClone(message);
      for (const other of open) {
        if (other !== this && other.name === this.name) setTimeout(() => !other.muted && other.onmessage?.({ data: copy }), 0);
      }
    }
    close() {
      open.splice(open.indexOf(this), 1);
    }
  }
  return { Channel, open };
}

/** A gateway's multi-session endpoints whose stream events the test writes. */
function fakeGateway() {
  const streams = [];
  const requests = [];
  const encoder = new TextEncoder();
  async function fetchFn(url, init = {}) {
    const path = new URL(url).pathname;
    const method = init.method ?? "GET";
    const body = init.body ? JSON.parse(init.body) : null;
    requests.push({ path, method, body, authorization: init.headers?.Authorization });
    if (method === "POST" && path === "/v1/streams") {
      let controller;
      const stream = {
        id: `st_${streams.length + 1}`,
        sessions: body.sessions.map((s) => s.session_id),
        opened: body.sessions,
        aborted: false,
        send(type, data, id) {
          controller.enqueue(encoder.encode(`${id ? `id: ${id}\n` : ""}event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`));
        },
        event(sessionId, seq, data) {
          this.send(data.type, { session_id: sessionId, seq, ...data }, `${sessionId}:${seq}`);
        },
      };
      const readable = new ReadableStream({ start: (c) => (controller = c) });
      init.signal?.addEventListener("abort", () => {
        stream.aborted = true;
        controller.error(new DOMException("aborted", "AbortError"));
      });
      streams.push(stream);
      stream.send("ready", { stream_id: stream.id, heartbeat_ms: 15000, sessions: stream.sessions, refused: [] });
      return new Response(readable, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    const join = /^\/v1\/streams\/([^/]+)\/sessions$/.exec(path);
    if (method === "POST" && join) {
      const stream = streams.find((s) => s.id === join[1]);
      stream.sessions.push(body.session_id);
      stream.send("session_joined", { session_id: body.session_id });
      return Response.json({ stream_id: stream.id, session_id: body.session_id, joined: true });
    }
    if (method === "DELETE") return new Response(null, { status: 204 });
    return Response.json({ error: { code: "NOT_FOUND", message: "no such route" } }, { status: 404 });
  }
  return { fetchFn, streams, requests };
}

/** A member as a client attaches it, recording what it is told. */
function member(sessionId, cursor = null) {
  const m = {
    sessionId,
    token: `tgs_${sessionId}`,
    cursorValue: cursor,
    events: [],
    statuses: [],
    refused: [],
    cursor: () => m.cursorValue,
    onEvent: (ev) => {
      m.events.push(ev);
      if (Number.isFinite(ev.seq)) m.cursorValue = ev.seq;
    },
    onStatus: (transport) => m.statuses.push(transport),
    onRefused: (error) => m.refused.push(error),
  };
  return m;
}

const made = [];
afterEach(() => {
  for (const c of made.splice(0)) c.dispose();
});

function page(shared, extra = {}) {
  const coordinator = new TabCoordinator({
    baseUrl: BASE,
    fetchFn: shared.gateway.fetchFn,
    locks: shared.locks,
    BroadcastChannel: shared.channels.Channel,
    page: extra.page ?? null,
    sseReadyTimeoutMs: 2000,
    sseRetryMs: 60000,
    sseRetryMaxMs: 60000,
    reconnectBaseMs: 100,
    reconnectMaxMs: 1000,
  });
  made.push(coordinator);
  return coordinator;
}

function browser() {
  return { locks: new FakeLocks(), channels: fakeChannels(), gateway: fakeGateway() };
}

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

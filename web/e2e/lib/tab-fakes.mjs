// Fakes of what a browser gives the tab coordinator (web/static/toolgate-tabs.js)
// in Node: a Web Locks manager, BroadcastChannels between "pages" that a test
// can silence, and a gateway's multi-session stream whose events the test
// writes; members as a client attaches them, and pages (coordinators) of one
// fake browser. Used by sdk/tabs*.test.mjs.

import { TabCoordinator } from "../../static/toolgate-tabs.js";

/** The fake gateway's address. */
export const BASE = "http://gateway.test";

/** A Web Locks manager (exclusive locks, waiting in line, signal and steal) shared by the fake pages. */
export class FakeLocks {
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
export function fakeChannels() {
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

/**
 * A gateway's multi-session endpoints whose stream events the test writes;
 * at most `limit` sessions on a stream (400 on an open, 409 on a join past
 * it), and never a stream opened with none (400), as the gateway does. The
 * sessions in `refuse` are refused on an open (a stream that then carries
 * none ends at once); `answerMulti()`, when given, answers every open and
 * poll instead (a gateway without these endpoints).
 */
export function fakeGateway({ limit = 64, refuse = [], answerMulti = null } = {}) {
  const streams = [];
  const requests = [];
  const encoder = new TextEncoder();
  async function fetchFn(url, init = {}) {
    const path = new URL(url).pathname;
    const method = init.method ?? "GET";
    const body = init.body ? JSON.parse(init.body) : null;
    const request = { path, method, body, authorization: init.headers?.Authorization, status: null };
    requests.push(request);
    const response = await answer(path, method, body, init);
    request.status = response.status;
    return response;
  }
  async function answer(path, method, body, init) {
    if (answerMulti && (path === "/v1/streams" || path === "/v1/poll")) return answerMulti();
    if (method === "POST" && path === "/v1/streams") {
      if (body.sessions.length === 0) return refusal(400, "BAD_REQUEST", "no sessions");
      if (body.sessions.length > limit) return refusal(400, "BAD_REQUEST", `at most ${limit} sessions may share one stream or poll`, { limit });
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
      const refused = stream.sessions.filter((id) => refuse.includes(id));
      stream.sessions = stream.sessions.filter((id) => !refuse.includes(id));
      const refusals = refused.map((id) => ({ session_id: id, code: "UNAUTHENTICATED", message: "invalid session token" }));
      stream.send("ready", { stream_id: stream.id, heartbeat_ms: 15000, sessions: stream.sessions, refused: refusals });
      if (stream.sessions.length === 0) controller.close(); // every session refused: the stream ends at once
      return new Response(readable, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    const join = /^\/v1\/streams\/([^/]+)\/sessions$/.exec(path);
    if (method === "POST" && join) {
      const stream = streams.find((s) => s.id === join[1] && !s.aborted);
      if (!stream) return refusal(404, "NOT_FOUND", "no such stream");
      if (stream.sessions.includes(body.session_id)) return Response.json({ stream_id: stream.id, session_id: body.session_id, joined: true });
      if (stream.sessions.length >= limit) return refusal(409, "CONFLICT", `the stream carries ${limit} sessions`, { limit });
      stream.sessions.push(body.session_id);
      stream.send("session_joined", { session_id: body.session_id });
      return Response.json({ stream_id: stream.id, session_id: body.session_id, joined: true });
    }
    const leave = /^\/v1\/streams\/([^/]+)\/sessions\/([^/]+)$/.exec(path);
    if (method === "DELETE" && leave) {
      const stream = streams.find((s) => s.id === leave[1]);
      const at = stream?.sessions.indexOf(leave[2]) ?? -1;
      if (at === -1) return refusal(404, "NOT_FOUND", "not on the stream");
      stream.sessions.splice(at, 1);
      stream.send("session_left", { session_id: leave[2], reason: "left" });
      return new Response(null, { status: 204 });
    }
    return refusal(404, "NOT_FOUND", "no such route");
  }
  function refusal(status, code, message, details) {
    return Response.json({ error: { code, message, details } }, { status });
  }
  return { fetchFn, streams, requests };
}


/** A member as a client attaches it, recording what it is told. */
export function member(sessionId, cursor = null) {
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

/**
 * Registers (with the test runner's afterEach) the disposal of every page a
 * test made, and returns `browser(gatewayOptions)` (shared locks, channels
 * and fake gateway) and `page(browser, {page, ...options})` (a coordinator
 * of that browser; `page` is the EventTarget of its lifecycle events).
 */
export function tabFixture(afterEach) {
  const made = [];
  afterEach(() => {
    for (const c of made.splice(0)) c.dispose();
  });
  function page(shared, extra = {}) {
    const { page: lifecycle = null, ...options } = extra;
    const coordinator = new TabCoordinator({
      baseUrl: BASE,
      fetchFn: shared.gateway.fetchFn,
      locks: shared.locks,
      BroadcastChannel: shared.channels.Channel,
      page: lifecycle,
      sseReadyTimeoutMs: 2000,
      sseRetryMs: 60000,
      sseRetryMaxMs: 60000,
      reconnectBaseMs: 100,
      reconnectMaxMs: 1000,
      ...options,
    });
    made.push(coordinator);
    return coordinator;
  }
  function browser(gatewayOptions) {
    return { locks: new FakeLocks(), channels: fakeChannels(), gateway: fakeGateway(gatewayOptions) };
  }
  return { page, browser };
}

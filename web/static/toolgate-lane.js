// One connection that carries the events of a group of sessions, at most
// the gateway's `--max-sessions-per-stream` of them (toolgate-multi.js splits
// the sessions of every tab into such groups): `POST /v1/streams`, with
// sessions joining and leaving it as tabs come and go, or `POST /v1/poll`
// where a proxy holds the stream back. The wire contract is the
// "multi-session stream" part of docs/PROTOCOL.md. Tokens travel in request
// bodies only (and in the Authorization header of a leave).

import { ToolgateError, backoffDelay, requestJSON, sleep } from "./toolgate-http.js";
import { PathMemory } from "./toolgate-path.js";
import { ReconnectPolicy, TransportSwitches } from "./toolgate-reconnect.js";
import { decodePollEvent, probeStream, probeWhilePolling, readEventStream } from "./toolgate-transport.js";

/** Errors after which the stream cannot be trusted and the connection polls. */
const STREAM_HELD_BACK = new Set(["STREAM_NOT_READY", "STREAM_STALLED"]);

/** How long a change of the polled sessions waits for more changes before it polls again. */
const POLL_REGROUP_MS = 50;

/** The hold of a poll until the gateway said its own (an earlier gateway says none). */
const DEFAULT_POLL_WAIT_MS = 25000;
/** How long after its hold a poll that got no answer is given up. */
const POLL_GRACE_MS = 15000;
/** A poll answered this close to the end of its hold ran the full hold. */
const POLL_FULL_HOLD_SLACK_MS = 250;

/**
 * One session carried by a lane (made and updated by MultiSessionConnection).
 * `resting` is set while a session a newer connection of it replaced waits
 * out its backoff before it is carried again (`replacements` counts the
 * replacements in a row, `replacedAt` is the last one's time).
 * @typedef {{sessionId: string, token: string, owner: string, cursor: number|null,
 *            pollCursor: number|null, joinedOn: object|null, joining: object|null, lane: SessionLane|null,
 *            resting?: boolean, replacements?: number, replacedAt?: number}} CarriedSession
 */

/**
 * One stream (or poll) for a group of sessions. It is told which sessions to
 * carry (add, remove) and reports through its callbacks: `deliver(sessionId, ev)`
 * for each event of a session, `refuse(session, error)` when the gateway
 * refuses a session or the session ended (the lane no longer carries it),
 * `full(lane, limit, session)` when the gateway says the group is too big
 * (a 400 on open or poll, a 409 on a join: `session` is the one refused),
 * `unavailable(error)` when the gateway has no multi-session endpoints,
 * `changed()` when the transport or the set of sessions on it changed, and
 * `problem(error, during)` for the trouble the client's "error" event reports.
 * It never opens a stream or polls with no session.
 */
export class SessionLane {
  /** @type {Map<string, CarriedSession>} */
  sessions = new Map();
  /** "sse" or "poll" while live, else null. */
  transport = null;
  #opts;
  /** The live connection (a fresh object per stream or polling run); sessions joined to it point at it. */
  #conn = null;
  #streamId = null;
  /** Aborts the held poll, so that it is asked again with the new set of sessions. */
  #regroupPoll = null;
  #membershipChanged = null;
  /** The heartbeat asked and the poll hold, learned per gateway (shared by the tabs). */
  #path;
  /** When to probe the stream while polling, and the bound on switching. */
  #switches;
  /** The gateway's --poll-wait, as its poll replies say. */
  #gatewayPollWaitMs = null;
  /** The last transport that was live, to count switches. */
  #lastTransport = null;
  #info = { heartbeat_ms: null, poll_wait_ms: null, cuts: 0, last_cut: null };

  /**
   * @param {{baseUrl: string, fetchFn: typeof fetch, sseReadyTimeoutMs: number, sseRetryMs: number,
   *          sseRetryMaxMs: number, stallTimeoutMs?: number, pollWaitMs?: number, reconnectBaseMs: number,
   *          reconnectMaxMs: number, deliver: Function, refuse: Function, full: Function, unavailable: Function,
   *          changed: Function, problem: Function}} opts
   */
  constructor(opts) {
    this.#opts = opts;
    this.#path = new PathMemory({ baseUrl: opts.baseUrl, storage: opts.pathStorage });
    this.#switches = new TransportSwitches({ probeMs: opts.sseRetryMs, probeMaxMs: opts.sseRetryMaxMs });
  }

  /** The ids of the sessions on the live connection. */
  get joined() {
    if (!this.transport) return [];
    return [...this.sessions.values()].filter((s) => s.joinedOn === this.#conn).map((s) => s.sessionId);
  }

  /** Whether the session is live on this lane's connection. */
  carries(s) {
    return this.transport !== null && s.joinedOn === this.#conn && this.sessions.get(s.sessionId) === s;
  }

  /**
   * Carries a session, or takes note that one carried changed (its cursor):
   * a session not yet live on the connection is joined to it.
   */
  add(s) {
    this.sessions.set(s.sessionId, s);
    s.lane = this;
    if (s.joinedOn !== this.#conn || !this.transport) this.#membership();
    if (this.transport === "sse") this.#join(s);
  }

  /** Stops carrying a session; one live on the stream leaves it. */
  remove(s) {
    if (this.sessions.get(s.sessionId) !== s) return;
    this.sessions.delete(s.sessionId);
    if (s.lane === this) s.lane = null;
    const streamId = this.#streamId;
    if (this.transport === "sse" && s.joinedOn === this.#conn && streamId) {
      const url = `${this.#opts.baseUrl}/v1/streams/${encodeURIComponent(streamId)}/sessions/${encodeURIComponent(s.sessionId)}`;
      requestJSON(this.#opts.fetchFn, url, { method: "DELETE", token: s.token }).catch(() => {});
    }
    s.joinedOn = null;
    this.#membership();
    this.#opts.changed();
  }

  /** Runs the connection until the signal aborts: the stream, the poll where it is held back, reconnects. */
  async run(signal) {
    let mode = "sse";
    let climbing = false;
    const policy = new ReconnectPolicy({ baseMs: this.#opts.reconnectBaseMs, maxMs: this.#opts.reconnectMaxMs });
    while (!signal.aborted) {
      if (this.#awake().length === 0) {
        await this.#nextMembershipChange(signal);
        continue;
      }
      try {
        if (mode === "sse") await this.#runStream(signal, policy);
        else await this.#runPolling(signal, policy);
        // The poll returns when a probe found that the stream gets through.
        climbing = mode === "poll";
        if (mode === "poll") mode = "sse";
      } catch (err) {
        if (signal.aborted) break;
        if (STREAM_HELD_BACK.has(err?.code)) {
          // A climb the probe allowed whose stream is held back after all:
          // the next probe waits longer.
          if (climbing && !err?.wasLive) this.#switches.probeFailed();
          climbing = false;
          this.#opts.problem(err, "stream");
          mode = "poll";
          continue;
        }
        climbing = false;
        // A stream that had gone live (the probe of the poll among them) is
        // tried again first; only a held-back one sends the lane to the poll.
        if (err?.wasLive) mode = "sse";
        this.#setTransport(null, null);
        // Every session refused (the gateway then ends the stream) or gone:
        // nothing to reconnect until a session comes.
        if (err?.code === "STREAM_ENDED" && this.sessions.size === 0) continue;
        if (this.#tooMany(err)) continue;
        if (sharingRefused(err)) {
          // No multi-session endpoints (an earlier gateway, or a proxy that
          // blocks them), or a request they always refuse: each client is
          // better off on its own connection than retrying this for ever.
          this.#opts.unavailable(new ToolgateError("SHARING_UNAVAILABLE", `The gateway cannot carry several sessions on one connection: ${err.message}`, { cause: err, status: err.status }));
          break;
        }
        this.#opts.problem(err, "connection");
        // A connection that went live reconnects at once; attempts that
        // never did back off (toolgate-reconnect.js).
        await sleep(policy.delay(err), signal);
      }
    }
    this.#setTransport(null, null);
  }

  /** What the lane learned of its path: see ConnectionInfo in toolgate.d.ts. */
  get info() {
    return { ...this.#info, heartbeat_ms: this.transport === "sse" ? this.#info.heartbeat_ms : null, poll_wait_ms: this.transport === "poll" ? this.#info.poll_wait_ms : null };
  }

  /**
   * A live connection ended without the gateway saying so: counted, kept as
   * the last cut, and (a stream's) taught to the path memory, which may ask
   * for a shorter heartbeat from the next stream on.
   */
  #cut(transport, { afterMs, reason, idleMs, heartbeatMs }) {
    this.#info.cuts++;
    this.#info.last_cut = { at: new Date().toISOString(), after_ms: Math.round(afterMs), reason, transport };
    if (transport === "sse") this.#path.streamCut(idleMs, heartbeatMs);
    this.#opts.changed();
  }

  // --- the stream ---------------------------------------------------------------

  /** Reads one multi-session stream until it fails; rejects when it ends. */
  async #runStream(signal, policy, onReady) {
    const controller = new AbortController();
    let stopped = false;
    const stop = () => {
      stopped = true;
      controller.abort();
    };
    signal.addEventListener("abort", stop, { once: true });
    const conn = { stop };
    let heldBack = null;
    let timer = null;
    let heartbeatMs = 15000;
    const arm = (ms, code, message) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        heldBack = new ToolgateError(code, message);
        controller.abort();
      }, ms);
    };
    const stallMs = () => this.#opts.stallTimeoutMs ?? heartbeatMs * 2 + 5000;
    const readyMs = this.#opts.sseReadyTimeoutMs;
    arm(readyMs, "STREAM_NOT_READY", `The event stream did not deliver "ready" within ${readyMs} ms (a proxy may be buffering it)`);
    let ready = false;
    let readyAt = 0;
    let lastActivity = 0;
    const opened = this.#awake();
    const body = { sessions: opened.map((s) => wireSession(s, s.cursor)) };
    const asked = this.#path.heartbeatMs;
    if (asked !== null) body.heartbeat_ms = asked;
    try {
      await readEventStream({
        fetchFn: this.#opts.fetchFn,
        url: `${this.#opts.baseUrl}/v1/streams`,
        body,
        signal: controller.signal,
        onActivity: () => {
          lastActivity = Date.now();
          if (ready) arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
        },
        onEvent: (ev) => {
          if (ev.type === "ready") {
            ready = true;
            readyAt = Date.now();
            if (Number.isFinite(ev.heartbeat_ms)) heartbeatMs = ev.heartbeat_ms;
            this.#info.heartbeat_ms = heartbeatMs;
            arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
            this.#switches.streamWorked();
            policy.live();
            onReady?.();
            this.#streamReady(conn, ev, opened);
            return;
          }
          if (ready) this.#streamEvent(conn, ev);
        },
      });
      if (heldBack) throw heldBack;
      throw new ToolgateError("STREAM_ENDED", "The gateway ended the event stream");
    } catch (err) {
      const failure = heldBack ?? err;
      if (ready && failure !== null && typeof failure === "object") failure.wasLive = true;
      if (ready && !stopped && !signal.aborted && this.sessions.size > 0) {
        const now = Date.now();
        const reason = failure?.code === "STREAM_STALLED" ? "stalled" : failure?.code === "STREAM_ENDED" ? "ended" : "reset";
        this.#cut("sse", { afterMs: now - readyAt, idleMs: now - lastActivity, reason, heartbeatMs });
      }
      throw failure;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", stop);
      if (this.#conn === conn) this.#setTransport(null, null);
    }
  }

  #streamReady(conn, ready, opened) {
    this.#streamId = typeof ready.stream_id === "string" ? ready.stream_id : null;
    const accepted = new Set(Array.isArray(ready.sessions) ? ready.sessions : []);
    for (const s of opened) if (accepted.has(s.sessionId) && this.sessions.get(s.sessionId) === s) s.joinedOn = conn;
    for (const r of Array.isArray(ready.refused) ? ready.refused : []) this.#refuse(r.session_id, refusalError(r));
    this.#setTransport("sse", conn);
    // Sessions announced while the stream was being opened join it now.
    for (const s of this.sessions.values()) if (s.joinedOn !== conn) this.#join(s);
  }

  #streamEvent(conn, ev) {
    const s = typeof ev.session_id === "string" ? this.sessions.get(ev.session_id) : undefined;
    switch (ev.type) {
      case "ping":
        return;
      case "session_joined":
        if (s && s.joinedOn !== conn) {
          s.joinedOn = conn;
          this.#opts.changed();
        }
        return;
      case "session_left":
        if (!s) return;
        if (ev.reason === "replaced") {
          // A newer connection of the session took its place: it joins again
          // after its backoff, not at once (which would replace that one).
          if (s.joinedOn === conn) s.joinedOn = null;
          this.#rest(s);
        } else if (ev.reason !== "left") {
          this.#refuse(s.sessionId, sessionEnded(ev.reason));
        } else if (s.joinedOn === conn) {
          // Left, yet carried: a tab's leave (a reload) crossed the next page's
          // join of the same session, and the gateway took them the other way round.
          s.joinedOn = null;
          this.#opts.changed();
          this.#join(s);
        }
        return;
      default:
        if (!s) return; // a session no longer carried (its leave is on the way)
        if (Number.isFinite(ev.seq)) {
          if (s.cursor === null || ev.seq > s.cursor) s.cursor = ev.seq;
          s.pollCursor = null;
        }
        this.#opts.deliver(s.sessionId, ev);
    }
  }

  /** Joins a session to the live stream (once per stream). */
  async #join(s) {
    const conn = this.#conn;
    const streamId = this.#streamId;
    if (this.transport !== "sse" || !streamId || s.joinedOn === conn || s.joining === conn || s.resting) return;
    s.joining = conn;
    try {
      await requestJSON(this.#opts.fetchFn, `${this.#opts.baseUrl}/v1/streams/${encodeURIComponent(streamId)}/sessions`, {
        method: "POST",
        body: wireSession(s, s.cursor),
      });
      if (this.sessions.get(s.sessionId) === s && this.#conn === conn) {
        s.joinedOn = conn;
        this.#opts.changed();
      }
    } catch (err) {
      if (this.#conn !== conn || this.sessions.get(s.sessionId) !== s) return;
      if (err instanceof ToolgateError && (err.status === 400 || err.status === 401 || err.status === 403)) {
        this.#refuse(s.sessionId, err);
      } else if (err instanceof ToolgateError && err.status === 409) {
        // The stream is full: the session goes on another lane; this stream
        // and the sessions on it carry on.
        this.#opts.full(this, sessionLimit(err) ?? this.joined.length, s);
      } else {
        // 404 is an ended stream or a gone session, the same code for both; a
        // new stream tells which (its ready event refuses a gone session).
        // Network trouble also starts a new stream.
        this.#opts.problem(err, "connection");
        conn.stop();
      }
    } finally {
      if (s.joining === conn) s.joining = null;
    }
  }

  /**
   * Whether an error of an open or a poll says the group is bigger than the
   * gateway takes; if so the sessions beyond the limit were handed back.
   */
  #tooMany(err) {
    if (!(err instanceof ToolgateError) || err.status !== 400) return false;
    const limit = sessionLimit(err);
    if (limit === null || this.sessions.size <= limit) return false;
    this.#opts.full(this, limit, null);
    return this.sessions.size <= limit;
  }

  // --- the poll -----------------------------------------------------------------

  /**
   * Long-polls every carried session until the signal aborts or an error,
   * holding each poll as long as the path lets it (PathMemory). Meanwhile it
   * probes the stream now and then (TransportSwitches): it returns when a
   * probe found that the stream gets through, and against a gateway without
   * the probe it opens the stream itself beside the poll, letting it carry
   * on once it delivers "ready".
   */
  async #runPolling(signal, policy) {
    const pollController = new AbortController();
    const stopPoll = () => pollController.abort();
    signal.addEventListener("abort", stopPoll, { once: true });
    const conn = { stop: stopPoll };
    let probe = null;
    const stopProbing = probeWhilePolling({
      switches: this.#switches,
      signal: pollController.signal,
      probe: () => {
        const carried = this.#awake()[0];
        if (!carried) return Promise.resolve(null);
        return probeStream({ fetchFn: this.#opts.fetchFn, baseUrl: this.#opts.baseUrl, sessionId: carried.sessionId, token: carried.token, signal: pollController.signal, timeoutMs: this.#opts.sseReadyTimeoutMs });
      },
      climb: stopPoll,
      tryStream: () => (probe = this.#runStream(signal, policy, stopPoll)),
      failed: (err) => this.#opts.problem(err, "stream-probe"),
    });
    // A first poll (and one after each change of the sessions) answers at
    // once, so that the sessions count as live without waiting a whole period.
    let first = true;
    try {
      while (!pollController.signal.aborted) {
        const polled = this.#awake();
        if (polled.length === 0) {
          await this.#nextMembershipChange(pollController.signal);
          first = true;
          continue;
        }
        const ceiling = this.#opts.pollWaitMs ?? this.#gatewayPollWaitMs ?? DEFAULT_POLL_WAIT_MS;
        const waitMs = first ? 0 : this.#path.pollHoldMs(ceiling);
        first = false;
        const held = new AbortController();
        const abortHeld = () => held.abort();
        pollController.signal.addEventListener("abort", abortHeld, { once: true });
        let regrouped = false;
        this.#regroupPoll = () => {
          regrouped = true;
          held.abort();
        };
        let timedOut = false;
        const giveUp = setTimeout(() => {
          timedOut = true;
          held.abort();
        }, waitMs + POLL_GRACE_MS);
        const startedAt = Date.now();
        let reply;
        try {
          reply = await requestJSON(this.#opts.fetchFn, `${this.#opts.baseUrl}/v1/poll`, {
            method: "POST",
            body: { sessions: polled.map((s) => wireSession(s, s.pollCursor ?? s.cursor)), wait_ms: waitMs },
            signal: held.signal,
          });
        } catch (err) {
          if (pollController.signal.aborted) break;
          if (regrouped) {
            await sleep(POLL_REGROUP_MS, pollController.signal);
            first = true;
            continue;
          }
          const failure = timedOut ? new ToolgateError("NETWORK", `The poll got no answer within ${waitMs + POLL_GRACE_MS} ms`) : err;
          const reason = pollCutReason(failure, waitMs, Date.now() - startedAt, timedOut);
          if (reason === null || this.transport !== "poll") throw failure;
          // A held poll the path cut (a proxy's 502/504, a reset, a timeout):
          // the hold halves for the origin, and the poll is asked again.
          this.#info.poll_wait_ms = this.#path.pollCut(waitMs);
          this.#cut("poll", { afterMs: Date.now() - startedAt, reason });
          await sleep(policy.delay(failure), pollController.signal);
          continue;
        } finally {
          this.#regroupPoll = null;
          clearTimeout(giveUp);
          pollController.signal.removeEventListener("abort", abortHeld);
        }
        if (pollController.signal.aborted) break; // the stream took over; it replays these events too
        if (Number.isInteger(reply?.poll_wait_ms) && reply.poll_wait_ms > 0) this.#gatewayPollWaitMs = reply.poll_wait_ms;
        if (waitMs > 0 && Date.now() - startedAt >= waitMs - POLL_FULL_HOLD_SLACK_MS) this.#path.pollClean(ceiling);
        this.#info.poll_wait_ms = this.#path.pollHoldMs(this.#opts.pollWaitMs ?? this.#gatewayPollWaitMs ?? DEFAULT_POLL_WAIT_MS);
        policy.live();
        this.#pollReply(conn, reply);
      }
    } finally {
      stopProbing();
      signal.removeEventListener("abort", stopPoll);
      if (this.#conn === conn) this.#setTransport(null, null);
    }
    // Polling stopped: the connection ends, a probe stream is live, or a
    // probe found that the stream gets through (the caller opens it).
    if (probe && !signal.aborted) await probe;
  }

  #pollReply(conn, reply) {
    if (!reply || !Array.isArray(reply.sessions)) throw new ToolgateError("BAD_RESPONSE", "The poll reply has no sessions list");
    for (const entry of reply.sessions) {
      const s = this.sessions.get(entry?.session_id);
      if (!s) continue;
      s.joinedOn = conn;
      let replaced = false;
      for (const ev of (Array.isArray(entry.events) ? entry.events : []).map(decodePollEvent).filter(Boolean)) {
        if (ev.type === "stream_replaced") {
          replaced = true;
          continue;
        }
        if (Number.isFinite(ev.seq) && (s.cursor === null || ev.seq > s.cursor)) s.cursor = ev.seq;
        this.#opts.deliver(s.sessionId, ev);
      }
      if (Number.isFinite(entry.cursor)) s.pollCursor = entry.cursor;
      if (replaced) {
        s.joinedOn = null;
        this.#rest(s);
      }
      if (entry.ended) this.#refuse(s.sessionId, sessionEnded("closed"));
    }
    for (const r of Array.isArray(reply.refused) ? reply.refused : []) this.#refuse(r.session_id, refusalError(r));
    this.#setTransport("poll", conn);
  }

  /** Asks the held poll again with the sessions carried now (after an add or a remove). */
  #membership() {
    this.#membershipChanged?.();
    this.#membershipChanged = null;
    this.#regroupPoll?.();
  }

  #nextMembershipChange(signal) {
    return new Promise((resolve) => {
      this.#membershipChanged = resolve;
      signal.addEventListener("abort", resolve, { once: true });
    });
  }

  /** The carried sessions not resting after a replacement. */
  #awake() {
    return [...this.sessions.values()].filter((s) => !s.resting);
  }

  /**
   * A newer connection of the session replaced its place on this lane's
   * stream or poll (the gateway keeps a few per session): the session rests
   * for the reconnect backoff, growing while replacements come in a row, and
   * is then carried again — so two connections of one session cannot make
   * the gateway and each other spin.
   */
  #rest(s) {
    const now = Date.now();
    if (now - (s.replacedAt ?? 0) > 2 * this.#opts.reconnectMaxMs) s.replacements = 0;
    s.replacedAt = now;
    const delay = backoffDelay(s.replacements ?? 0, this.#opts.reconnectBaseMs, this.#opts.reconnectMaxMs);
    s.replacements = (s.replacements ?? 0) + 1;
    s.resting = true;
    this.#opts.problem(new ToolgateError("STREAM_REPLACED", `A newer connection of session ${s.sessionId} replaced its place on this connection; it is carried again in ${delay} ms`), "connection");
    this.#opts.changed();
    this.#membership();
    setTimeout(() => {
      s.resting = false;
      if (this.sessions.get(s.sessionId) !== s) return;
      this.#membership();
      this.#join(s);
    }, delay);
  }

  #refuse(sessionId, error) {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    this.sessions.delete(sessionId);
    if (s.lane === this) s.lane = null;
    this.#opts.refuse(s, error);
    this.#opts.changed();
  }

  #setTransport(transport, conn) {
    if (this.transport === transport && this.#conn === conn) return;
    if (transport !== null) {
      if (this.#lastTransport !== null && this.#lastTransport !== transport) this.#switches.switched();
      this.#lastTransport = transport;
    }
    this.transport = transport;
    this.#conn = conn;
    if (!conn) this.#streamId = null;
    this.#opts.changed();
  }
}

/** The most sessions one stream or poll may carry, as a 400 or 409 of the gateway says it; null when it does not. */
export function sessionLimit(err) {
  const limit = err?.details?.limit;
  if (Number.isInteger(limit) && limit > 0) return limit;
  const said = /at most (\d+) sessions/.exec(typeof err?.message === "string" ? err.message : "");
  return said && Number(said[1]) > 0 ? Number(said[1]) : null;
}

/**
 * Why a held poll counts as cut by the path (a proxy's 502/503/504, a
 * reset or a timeout during the hold), or null when it failed otherwise
 * (the gateway refused it, or nothing answered at all: a network or a
 * gateway that is down answers at once, not after a hold).
 */
export function pollCutReason(err, waitMs, elapsedMs, timedOut) {
  if (waitMs <= 0 || !(err instanceof ToolgateError)) return null;
  if (timedOut) return "timeout";
  if (elapsedMs < Math.min(1000, waitMs / 2)) return null;
  if (err.status === 502 || err.status === 503 || err.status === 504) return `http_${err.status}`;
  // A 504 without CORS headers reaches fetch as a TypeError, as a reset does.
  if (err.status === 0) return "reset";
  return null;
}

/** Whether an open or a poll failed in a way that asking again cannot mend: 404 or 405 (no such endpoint), or a 400 not about the limit. */
function sharingRefused(err) {
  return err instanceof ToolgateError && (err.status === 404 || err.status === 405 || err.status === 400);
}

/** A session as the multi-session endpoints take it: id, token, and the cursor when there is one. */
function wireSession(s, cursor) {
  const wire = { session_id: s.sessionId, token: s.token };
  if (Number.isFinite(cursor)) wire.cursor = cursor;
  return wire;
}

/** The error for a session the gateway refused on a stream's ready or in a poll's reply. */
function refusalError(refusal) {
  const code = typeof refusal?.code === "string" ? refusal.code : "UNAUTHENTICATED";
  const status = { UNAUTHENTICATED: 401, UNAUTHORIZED: 401, PERMISSION_DENIED: 403, NOT_FOUND: 404, BAD_REQUEST: 400, CONFLICT: 409 }[code] ?? 400;
  return new ToolgateError(code, refusal?.message ?? `The gateway refused session ${refusal?.session_id}`, { status });
}

/** The error for a session that closed or expired while carried. */
function sessionEnded(reason) {
  return new ToolgateError("NOT_FOUND", `The session ended (${reason ?? "closed"})`, { status: 404 });
}

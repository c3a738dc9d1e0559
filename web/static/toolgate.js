// toolgate browser SDK: lets a page (or a Node program) provide tools to a
// toolgate gateway. Usable as a plain ES module with no build step:
//
//   import { ToolgateClient } from "/toolgate.js";
//   const client = new ToolgateClient({ baseUrl: "https://gateway.example" });
//   client.registerTool({ name: "page_title", description: "Title of this page",
//                         handler: () => document.title });
//   await client.connect();
//
// The wire contract is docs/PROTOCOL.md: REST to register and answer, a
// Server-Sent Events stream to receive calls, long-poll where a proxy holds
// the stream back. In a browser the tabs of an origin share one such
// connection for all their sessions (toolgate-tabs.js). Types are in
// toolgate.d.ts beside this file.

import { CallRunner } from "./toolgate-calls.js";
import { SessionStore, ToolError, ToolgateError, backoffDelay, requestJSON, resolveStorage, sleep } from "./toolgate-http.js";
import { SessionLock, claimStorageKey } from "./toolgate-session.js";
import { canShareConnection, tabCoordinator } from "./toolgate-tabs.js";
import { pollEvents, readEventStream } from "./toolgate-transport.js";
import { validateTool } from "./toolgate-tools.js";

export { ToolError, ToolgateError, MemoryStorage, TOOL_ERROR_CODES } from "./toolgate-http.js";
export { SSEParser } from "./toolgate-transport.js";

/** The SDK's version, sent as the session's client version. */
export const VERSION = "0.1.0";

const TRANSPORTS = ["auto", "sse", "poll"];

/**
 * How long a client waits for its stored session's lock before it decides
 * that another live tab holds the session. The lock of a page that was just
 * reloaded, or of a client closed just before, is released a moment after;
 * a duplicated tab's original holds it for good.
 */
const SESSION_LOCK_WAIT_MS = 1000;

/** Errors after which the stream cannot be trusted and auto mode should poll. */
const STREAM_HELD_BACK = new Set(["STREAM_NOT_READY", "STREAM_STALLED"]);

/**
 * A client of a toolgate gateway: one session, its tools, and the connection
 * that receives their calls. It is an EventTarget; `on(type, fn)` is a
 * shorthand that passes the event's detail. Events: "state", "transport",
 * "session", "call", "registered", "error".
 *
 * Each client owns its session. By default it is kept in sessionStorage under
 * a key of its own (see `storageKey` in toolgate.d.ts): two clients in a page
 * get two sessions, and after a reload each takes up its own again. While it
 * runs, a client holds the Web Lock "toolgate-session:<id>"; a tab that finds
 * its stored session's lock held by another live tab (a duplicated tab, whose
 * sessionStorage is a copy) starts a session of its own.
 *
 * In a browser (Web Locks and BroadcastChannel present, `transport` "auto"),
 * the clients of every tab of an origin receive their calls over one
 * connection, held by one tab (the leader, elected with the Web Lock
 * "toolgate-leader:<baseUrl>"): a browser opens at most 6 HTTP/1.1
 * connections to a host, so a stream per tab would starve the answers. The
 * other tabs get their events over the BroadcastChannel "toolgate:<baseUrl>";
 * when the leading tab goes, another takes over within a few seconds. The
 * option `shareConnection: false`, a forced `transport`, or a platform
 * without those APIs (Node) gives the client a connection of its own.
 */
export class ToolgateClient extends EventTarget {
  #opts;
  #fetch;
  #storage;
  /** The default key's base, or null when the options gave a storageKey. */
  #storageKeyBase;
  /** This client's rank among the live clients sharing the key's base. */
  #storageKeyClaim = null;
  #store;
  /** The Web Lock on the session in use. */
  #sessionLock = new SessionLock(SESSION_LOCK_WAIT_MS);
  #session = null;
  #tools = new Map();
  #toolsDirty = true;
  #pendingRegistrations = [];
  #state = "idle";
  #transport = null;
  #cursor = null;
  #pollCursor = null;
  #resumeFromCursor = false;
  #loop = null;
  #connected = null;
  #sseRetryDelay;
  #runner;
  /** Whether the calls come over the connection the page's tabs share (toolgate-tabs.js). */
  #shared;

  /**
   * `options.storageKey`, when not given, is "toolgate:" + baseUrl, then
   * ":" + client.name when `options.client.name` is given, then ":2", ":3"…
   * for the second, third… live client of the same storage with that base,
   * in the order they are made (a closed client's rank goes to the next one
   * made). What stays the same across a reload is what picks the session
   * back up: a page that makes its clients in the same order on every load
   * needs nothing more; parts of an app made in an order that can change
   * (after lazy imports, after network replies) should each pass their own
   * `client.name`, or a `storageKey`, which is used exactly as given.
   * @param {import("./toolgate.d.ts").ToolgateClientOptions} [options]
   */
  constructor(options = {}) {
    super();
    const baseUrl = options.baseUrl ?? globalThis.location?.origin;
    if (typeof baseUrl !== "string" || !/^https?:\/\//.test(baseUrl)) {
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    }
    const transport = options.transport ?? "auto";
    if (!TRANSPORTS.includes(transport)) {
      throw new TypeError(`transport must be one of ${TRANSPORTS.join(", ")}, got ${JSON.stringify(transport)}`);
    }
    this.#opts = {
      baseUrl: baseUrl.replace(/\/+$/, ""),
      transport,
      clientKey: options.clientKey,
      client: { name: "toolgate-web", version: VERSION, platform: "web", ...options.client },
      metadata: options.metadata,
      sseReadyTimeoutMs: options.sseReadyTimeoutMs ?? 5000,
      sseRetryMs: options.sseRetryMs ?? 60000,
      sseRetryMaxMs: options.sseRetryMaxMs ?? 600000,
      stallTimeoutMs: options.stallTimeoutMs,
      pollWaitMs: options.pollWaitMs,
      reconnectBaseMs: options.reconnectBaseMs ?? 500,
      reconnectMaxMs: options.reconnectMaxMs ?? 30000,
    };
    this.#shared = options.shareConnection !== false && transport === "auto" && canShareConnection();
    const fetchFn = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") throw new TypeError("no fetch function: pass options.fetch");
    this.#fetch = (...args) => fetchFn(...args);
    this.#storage = resolveStorage(options.storage);
    if (options.storageKey !== undefined) {
      this.#storageKeyBase = null;
      this.#store = new SessionStore(this.#storage, options.storageKey);
    } else {
      const name = options.client?.name;
      this.#storageKeyBase = `toolgate:${this.#opts.baseUrl}${name ? `:${name}` : ""}`;
      this.#claimStorageKey();
    }
    this.#sseRetryDelay = this.#opts.sseRetryMs;
    this.#runner = new CallRunner({
      fetchFn: this.#fetch,
      baseUrl: this.#opts.baseUrl,
      getSession: () => this.#session,
      getTool: (name) => this.#tools.get(name),
      emit: (type, detail) => this.#emit(type, detail),
      persist: () => this.#persist(),
      retryBaseMs: this.#opts.reconnectBaseMs,
      retryMaxMs: this.#opts.reconnectMaxMs,
    });
  }

  /** "idle", "connecting", "connected", "reconnecting" or "closed". */
  get state() {
    return this.#state;
  }

  /** Whether this client receives its calls over the connection its page's tabs share. */
  get sharesConnection() {
    return this.#shared;
  }

  /** "sse" or "poll" while connected, else null. */
  get transport() {
    return this.#transport;
  }

  /** The session's id once there is one (also restored from storage). */
  get sessionId() {
    return this.#session?.sessionId ?? this.#store.load()?.sessionId ?? null;
  }

  /** The last event cursor received. */
  get cursor() {
    return this.#cursor;
  }

  /** The gateway's base URL, without a trailing slash. */
  get baseUrl() {
    return this.#opts.baseUrl;
  }

  /** The registered tools, as sent to the gateway (without handlers). */
  get tools() {
    return [...this.#tools.values()].map((t) => ({ ...t.wire }));
  }

  /** Ids of the calls whose handlers are running now. */
  get runningCalls() {
    return [...this.#runner.running.keys()];
  }

  /** Adds a listener that receives the event's detail; returns a function that removes it. */
  on(type, listener) {
    const wrapped = (event) => listener(event.detail);
    this.addEventListener(type, wrapped);
    return () => this.removeEventListener(type, wrapped);
  }

  /**
   * Registers a tool (or replaces one with the same name). Throws a TypeError
   * for a spec this SDK can tell is invalid. The promise settles when the
   * gateway has judged it: `{registered: true}` or `{registered: false, code, message}`;
   * it never rejects.
   * @param {import("./toolgate.d.ts").ToolDefinition} spec
   */
  registerTool(spec) {
    const tool = validateTool(spec);
    this.#tools.set(tool.wire.name, tool);
    const promise = new Promise((resolve) => this.#pendingRegistrations.push({ name: tool.wire.name, resolve }));
    if (this.#session && this.#state === "connected") {
      this.#registerTools(false, [tool]).catch((error) => this.#emit("error", { error, during: "register" }));
    } else {
      this.#toolsDirty = true;
    }
    return promise;
  }

  /**
   * Removes a tool here and, when connected, at the gateway. It re-registers
   * the remaining tools with `replace: true` rather than sending DELETE,
   * which some proxies drop.
   */
  async unregisterTool(name) {
    if (!this.#tools.delete(name)) return false;
    this.#toolsDirty = true;
    if (this.#session && this.#state === "connected") await this.#registerTools(true, [...this.#tools.values()]);
    return true;
  }

  /**
   * Creates or resumes the session, registers the tools and starts receiving
   * calls. Resolves once the transport is live; rejects only when the gateway
   * refuses this client for good (bad client key, invalid request). Network
   * trouble is retried with backoff meanwhile.
   */
  connect() {
    if (this.#loop && this.#state !== "closed") return this.#connected.promise;
    this.#connected = deferred();
    const controller = new AbortController();
    this.#loop = controller;
    this.#claimStorageKey();
    this.#watchPage(true);
    this.#runner.resume();
    // A fresh connect asks for the session's open calls instead of replaying
    // from the cursor: a call received before a reload (or a close) is behind
    // the cursor but still waits for its answer.
    this.#resumeFromCursor = false;
    this.#pollCursor = null;
    this.#supervise(controller.signal).catch((error) => this.#fail(error));
    return this.#connected.promise;
  }

  /**
   * Stops receiving calls and aborts running handlers (their calls stay open
   * at the gateway and come back on the next connect). With `endSession`, the
   * session is closed at the gateway and forgotten here.
   */
  async close({ endSession = false } = {}) {
    this.#loop?.abort();
    this.#loop = null;
    this.#runner.stop();
    this.#setTransport(null);
    this.#setState("closed");
    this.#connected?.reject(new ToolgateError("CLOSED", "The client was closed before it connected"));
    this.#connected?.promise.catch(() => {});
    const session = this.#session;
    if (endSession && session) {
      this.#session = null;
      this.#store.clear();
    }
    this.#letGo();
    if (endSession && session) {
      await requestJSON(this.#fetch, `${this.#sessionUrl(session)}/close`, { method: "POST", token: session.token }).catch(() => {});
    }
  }

  // --- the session's storage key and lock ------------------------------------

  /**
   * Lets go of what a running client holds besides its connection: the
   * session's lock, and the storage key's rank — a client made after this
   * one stopped may take the key (and resume the session left there); a
   * connect() again claims a key anew.
   */
  #letGo() {
    this.#watchPage(false);
    this.#sessionLock.release();
    this.#storageKeyClaim?.release();
    this.#storageKeyClaim = null;
  }

  /**
   * Takes the lowest free rank of the default key's base (nothing to do with
   * an explicit storageKey or a rank held). A client that connects again
   * after closing may get another rank than before: the session it had
   * belongs to its old key, so it is forgotten here (not at the gateway).
   */
  #claimStorageKey() {
    if (this.#storageKeyBase === null || this.#storageKeyClaim) return;
    this.#storageKeyClaim = claimStorageKey(this.#storage, this.#storageKeyBase);
    if (this.#store?.key === this.#storageKeyClaim.key) return;
    if (this.#store) {
      this.#session = null;
      this.#cursor = null;
      this.#runner.reset();
    }
    this.#store = new SessionStore(this.#storage, this.#storageKeyClaim.key);
  }

  /**
   * Takes up the session kept in storage (or still in memory when storage
   * failed), unless another live client holds its lock: then this client
   * forgets it and will create a session of its own.
   */
  async #resumeStoredSession(signal) {
    const stored = this.#store.load();
    const sessionId = stored?.sessionId ?? this.#session?.sessionId;
    if (!sessionId) return;
    const held = await this.#sessionLock.hold(sessionId);
    if (signal.aborted) return;
    if (!held) {
      this.#forgetSession();
      return;
    }
    if (stored) {
      this.#session = stored;
      this.#cursor = stored.cursor;
      this.#runner.restore(stored.outbox);
    }
  }

  /**
   * Releases the lock when the page goes (a reload, a navigation), so the
   * next page in this tab finds it free at once; takes it again when the
   * page comes back from the back/forward cache.
   */
  #watchPage(on) {
    if (typeof globalThis.addEventListener !== "function") return;
    const method = on ? "addEventListener" : "removeEventListener";
    globalThis[method]("pagehide", this.#onPageHide);
    globalThis[method]("pageshow", this.#onPageShow);
  }

  #onPageHide = () => this.#sessionLock.release();

  #onPageShow = (event) => {
    if (event.persisted) this.#retakeSessionLock();
  };

  async #retakeSessionLock() {
    const loop = this.#loop;
    const session = this.#session;
    if (!loop || !session) return;
    if ((await this.#sessionLock.hold(session.sessionId)) || loop.signal.aborted || this.#session !== session) return;
    // Another tab took this session up while the page was in the back/forward cache.
    loop.abort();
    this.#loop = null;
    this.#dropSession(new ToolgateError("SESSION_IN_USE", "Another tab took up this session while the page was away"));
    this.connect().catch(() => {});
  }

  // --- the connection supervisor -------------------------------------------

  async #supervise(signal) {
    await this.#resumeStoredSession(signal);
    let mode = this.#opts.transport === "poll" ? "poll" : "sse";
    for (let failures = 0; !signal.aborted; ) {
      try {
        this.#setState(this.#everConnected ? "reconnecting" : "connecting");
        await this.#ensureSession(signal);
        if (this.#shared) await this.#runShared(signal);
        else if (mode === "sse") await this.#runStream(signal);
        else await this.#runPolling(signal);
        failures = 0;
        if (this.#opts.transport === "auto" && mode === "poll") mode = "sse";
      } catch (err) {
        if (signal.aborted) return;
        if (err?.code === "SHARING_UNAVAILABLE") {
          this.#shared = false;
          continue;
        }
        if (isSessionGone(err)) {
          this.#dropSession(err);
          continue;
        }
        if (err?.fatal) throw err;
        // A cursor the session's log cannot serve: ask for the open calls instead.
        if (this.#shared && err?.code === "BAD_REQUEST") this.#resumeFromCursor = false;
        if (this.#opts.transport === "auto" && STREAM_HELD_BACK.has(err?.code)) {
          this.#emit("error", { error: err, during: "stream" });
          mode = "poll";
          continue;
        }
        // A connection that was live and broke (a gateway restart, a proxy
        // cutting an idle stream or a held poll) waits the first step of the
        // backoff again: only failures in a row make the wait grow.
        if (this.#transport !== null) failures = 0;
        // A stream that was live and broke (a gateway restart, a network
        // change) is tried again first; only a held-back stream means polling.
        if (this.#opts.transport === "auto" && this.#transport === "sse") mode = "sse";
        this.#setTransport(null);
        this.#setState("reconnecting");
        this.#emit("error", { error: err, during: "connection" });
        await sleep(err?.retryAfterMs ?? backoffDelay(failures++, this.#opts.reconnectBaseMs, this.#opts.reconnectMaxMs), signal);
      }
    }
  }

  get #everConnected() {
    return this.#resumeFromCursor;
  }

  async #ensureSession(signal) {
    if (!this.#session) {
      const headers = {};
      const body = { client: this.#opts.client };
      if (this.#opts.metadata !== undefined) body.metadata = this.#opts.metadata;
      let created;
      try {
        created = await requestJSON(this.#fetch, `${this.#opts.baseUrl}/v1/sessions`, {
          method: "POST",
          token: this.#opts.clientKey,
          headers,
          body,
          signal,
        });
      } catch (err) {
        if (err instanceof ToolgateError && !err.retryable) err.fatal = true;
        throw err;
      }
      // Nobody else knows the new id yet, so the lock is free; holding it
      // before the session is stored keeps a copy of this tab off it.
      await this.#sessionLock.hold(created.session_id);
      this.#session = {
        sessionId: created.session_id,
        token: created.token,
        cursor: null,
        heartbeatMs: created.heartbeat_ms,
        pollWaitMs: created.poll_wait_ms,
        outbox: [],
      };
      this.#cursor = null;
      this.#pollCursor = null;
      this.#resumeFromCursor = false;
      this.#toolsDirty = true;
      this.#persist();
      this.#emit("session", { sessionId: created.session_id, created: true });
    }
    if (this.#toolsDirty) await this.#registerTools(true, [...this.#tools.values()], signal);
  }

  async #registerTools(replace, tools, signal) {
    const session = this.#session;
    if (replace) this.#toolsDirty = false;
    let reply;
    try {
      reply = await requestJSON(this.#fetch, `${this.#sessionUrl(session)}/tools`, {
        method: "POST",
        token: session.token,
        body: { type: "register_tools", replace, tools: tools.map((t) => t.wire) },
        signal,
      });
    } catch (err) {
      this.#toolsDirty = true;
      throw err;
    }
    const rejected = Array.isArray(reply?.rejected) ? reply.rejected : [];
    const names = new Set(tools.map((t) => t.wire.name));
    const waiting = this.#pendingRegistrations;
    this.#pendingRegistrations = [];
    for (const pending of waiting) {
      if (!names.has(pending.name)) {
        this.#pendingRegistrations.push(pending);
        continue;
      }
      const refusal = rejected.find((r) => r.name === pending.name);
      pending.resolve(refusal ? { registered: false, code: refusal.code, message: refusal.message } : { registered: true });
    }
    this.#emit("registered", { count: reply?.count ?? tools.length, registered: reply?.registered ?? tools.length, rejected });
    for (const r of rejected) {
      this.#emit("error", { error: new ToolgateError(r.code, `Tool "${r.name}" was rejected: ${r.message}`), during: "register" });
    }
  }

  /** Reads the SSE stream until it fails; resolves when the gateway ends it. */
  async #runStream(signal, onReady) {
    const controller = new AbortController();
    const stop = () => controller.abort();
    signal.addEventListener("abort", stop, { once: true });
    let heldBack = null;
    let timer = null;
    const arm = (ms, code, message) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        heldBack = new ToolgateError(code, message);
        controller.abort();
      }, ms);
    };
    const readyMs = this.#opts.sseReadyTimeoutMs;
    arm(readyMs, "STREAM_NOT_READY", `The event stream did not deliver "ready" within ${readyMs} ms (a proxy may be buffering it)`);
    let ready = false;
    let replaced = false;
    const stallMs = () => this.#opts.stallTimeoutMs ?? (this.#session?.heartbeatMs ?? 15000) * 2 + 5000;
    const session = this.#session;
    try {
      await readEventStream({
        fetchFn: this.#fetch,
        url: `${this.#sessionUrl(session)}/events`,
        token: session.token,
        lastEventId: this.#resumeFromCursor ? this.#cursor : null,
        signal: controller.signal,
        onActivity: () => {
          if (ready) arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
        },
        onEvent: (ev) => {
          if (ev.type === "ready") {
            ready = true;
            if (Number.isFinite(ev.heartbeat_ms)) session.heartbeatMs = ev.heartbeat_ms;
            arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
            this.#sseRetryDelay = this.#opts.sseRetryMs;
            this.#live("sse");
            onReady?.();
            return;
          }
          if (ev.type === "stream_replaced") replaced = true;
          this.#handleEvent(ev);
        },
      });
      if (heldBack) throw heldBack;
      if (replaced) throw streamReplaced();
      throw new ToolgateError("STREAM_ENDED", "The gateway ended the event stream");
    } catch (err) {
      throw heldBack ?? err;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", stop);
    }
  }

  /**
   * Receives the session's events over the connection the page's tabs share,
   * until the signal aborts (resolves) or the gateway refuses the session
   * (rejects with its error). The transport and state follow the leading
   * tab's connection.
   */
  async #runShared(signal) {
    const session = this.#session;
    const coordinator = tabCoordinator(this.#opts.baseUrl, {
      fetchFn: this.#fetch,
      sseReadyTimeoutMs: this.#opts.sseReadyTimeoutMs,
      sseRetryMs: this.#opts.sseRetryMs,
      sseRetryMaxMs: this.#opts.sseRetryMaxMs,
      stallTimeoutMs: this.#opts.stallTimeoutMs,
      pollWaitMs: this.#opts.pollWaitMs,
      reconnectBaseMs: this.#opts.reconnectBaseMs,
      reconnectMaxMs: this.#opts.reconnectMaxMs,
    });
    await new Promise((resolve, reject) => {
      let member = null;
      const finish = (error) => {
        signal.removeEventListener("abort", onAbort);
        member?.detach();
        member = null;
        if (error) reject(error);
        else resolve();
      };
      const onAbort = () => finish();
      signal.addEventListener("abort", onAbort, { once: true });
      member = coordinator.attach({
        sessionId: session.sessionId,
        token: session.token,
        // A fresh connect asks for the open calls; a connection taken over by
        // another tab resumes from this client's own cursor.
        cursor: () => (this.#resumeFromCursor ? this.#cursor : null),
        onEvent: (ev) => {
          if (this.#session === session && !signal.aborted) this.#handleEvent(ev);
        },
        onStatus: (transport) => {
          if (signal.aborted) return;
          if (transport) {
            this.#live(transport);
          } else if (this.#state === "connected") {
            this.#setTransport(null);
            this.#setState("reconnecting");
          }
        },
        onRefused: (error) => finish(error),
        onProblem: (error, during) => this.#emit("error", { error, during }),
      });
    });
  }

  /**
   * Long-polls until the signal aborts or an error. In auto mode it also
   * probes the stream after a delay (doubling after each failed probe); once a
   * probe delivers "ready", polling stops and that stream carries on.
   */
  async #runPolling(signal) {
    const pollController = new AbortController();
    const stopPoll = () => pollController.abort();
    signal.addEventListener("abort", stopPoll, { once: true });
    let probe = null;
    let probeTimer = null;
    const scheduleProbe = () => {
      if (this.#opts.transport !== "auto" || signal.aborted) return;
      probeTimer = setTimeout(() => {
        probe = this.#runStream(signal, stopPoll);
        probe.catch((err) => {
          if (!pollController.signal.aborted) {
            this.#sseRetryDelay = Math.min(this.#sseRetryDelay * 2, this.#opts.sseRetryMaxMs);
            this.#emit("error", { error: err, during: "stream-probe" });
            scheduleProbe();
          }
        });
      }, this.#sseRetryDelay);
    };
    scheduleProbe();
    // The first poll asks for an answer at once, so the connection counts as
    // live (and connect() resolves) without waiting a whole poll period.
    let first = true;
    try {
      while (!pollController.signal.aborted) {
        const session = this.#session;
        const waitMs = first ? 0 : (this.#opts.pollWaitMs ?? session.pollWaitMs ?? 25000);
        first = false;
        const held = new AbortController();
        const abortHeld = () => held.abort();
        pollController.signal.addEventListener("abort", abortHeld, { once: true });
        const giveUp = setTimeout(abortHeld, waitMs + 15000);
        let reply;
        try {
          reply = await pollEvents({
            fetchFn: this.#fetch,
            baseUrl: this.#opts.baseUrl,
            sessionId: session.sessionId,
            token: session.token,
            cursor: this.#resumeFromCursor ? (this.#pollCursor ?? this.#cursor) : null,
            waitMs,
            signal: held.signal,
          });
        } catch (err) {
          if (pollController.signal.aborted) break;
          if (held.signal.aborted) throw new ToolgateError("NETWORK", `The poll got no answer within ${waitMs + 15000} ms`);
          throw err;
        } finally {
          clearTimeout(giveUp);
          pollController.signal.removeEventListener("abort", abortHeld);
        }
        if (pollController.signal.aborted) break; // the stream took over; it replays these events too
        this.#live("poll");
        for (const ev of reply.events) this.#handleEvent(ev);
        this.#pollCursor = reply.cursor;
        this.#persist();
        // Polling again at once would replace the newer connection in turn:
        // the supervisor waits its backoff first.
        if (reply.events.some((ev) => ev.type === "stream_replaced")) throw streamReplaced();
      }
    } finally {
      clearTimeout(probeTimer);
      signal.removeEventListener("abort", stopPoll);
    }
    // Polling stopped: either the client closes, or a probe stream is live.
    if (probe && !signal.aborted) await probe;
  }

  #live(transport) {
    this.#resumeFromCursor = true;
    this.#setTransport(transport);
    this.#setState("connected");
    this.#connected?.resolve();
  }

  #handleEvent(ev) {
    if (Number.isFinite(ev.seq)) {
      if (this.#cursor === null || ev.seq > this.#cursor) this.#cursor = ev.seq;
      this.#pollCursor = null;
      this.#persist();
    }
    switch (ev.type) {
      case "tool_call_request":
        this.#runner.accept(ev);
        break;
      case "call_cancelled":
        this.#runner.cancel(ev.id, ev.reason ?? "cancelled");
        break;
      default:
        break; // ping, and event types this version does not know
    }
  }

  #dropSession(err) {
    this.#emit("session", { sessionId: this.#session?.sessionId ?? null, created: false, lost: true, error: err });
    this.#forgetSession();
  }

  /** Lets go of the session: its lock, its stored state, its calls. */
  #forgetSession() {
    this.#sessionLock.release();
    this.#session = null;
    this.#store.clear();
    this.#runner.reset();
    this.#runner.resume();
    this.#cursor = null;
    this.#pollCursor = null;
    this.#resumeFromCursor = false;
  }

  #fail(error) {
    this.#loop?.abort();
    this.#loop = null;
    this.#letGo();
    this.#setTransport(null);
    this.#setState("closed");
    this.#emit("error", { error, during: "connect", fatal: true });
    this.#connected?.reject(error);
  }

  #persist() {
    if (!this.#session) return;
    this.#store.save({
      sessionId: this.#session.sessionId,
      token: this.#session.token,
      heartbeatMs: this.#session.heartbeatMs,
      pollWaitMs: this.#session.pollWaitMs,
      cursor: this.#cursor,
      outbox: [...this.#runner.outbox.values()],
    });
  }

  #sessionUrl(session) {
    return `${this.#opts.baseUrl}/v1/sessions/${encodeURIComponent(session.sessionId)}`;
  }

  #setState(state) {
    if (this.#state === state) return;
    const previous = this.#state;
    this.#state = state;
    this.#emit("state", { state, previous });
  }

  #setTransport(transport) {
    if (this.#transport === transport) return;
    this.#transport = transport;
    this.#emit("transport", { transport });
  }

  #emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

/** Whether an error means the session no longer exists or its token is refused. */
function isSessionGone(err) {
  // UNAUTHORIZED: the multi-session endpoints' refusal of a bad token, as the spec of issue 12 words it.
  return err instanceof ToolgateError && ["UNAUTHENTICATED", "UNAUTHORIZED", "NOT_FOUND"].includes(err.code) && !err.fatal;
}

function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * The error of a stream or poll the gateway ended because a newer connection
 * of the same session replaced it (it keeps a few per session,
 * `--max-streams-per-session`): the client reconnects after its backoff
 * delay, never at once, so that two connections of one session cannot make
 * the gateway and each other spin.
 */
function streamReplaced() {
  return new ToolgateError("STREAM_REPLACED", "A newer connection of this session replaced this one; reconnecting after the backoff delay");
}

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
import { SessionStore, ToolError, ToolgateError, requestJSON, resolveStorage, sleep } from "./toolgate-http.js";
import { pollCutReason } from "./toolgate-lane.js";
import { PathMemory } from "./toolgate-path.js";
import { RECONNECT_BASE_MS, RECONNECT_MAX_MS, ReconnectPolicy, TransportSwitches } from "./toolgate-reconnect.js";
import { SessionLock, claimStorageKey } from "./toolgate-session.js";
import { canShareConnection, tabCoordinator } from "./toolgate-tabs.js";
import { pollEvents, probeStream, probeWhilePolling, readEventStream } from "./toolgate-transport.js";
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

/** The hold of a poll when neither the page nor the gateway said one. */
const DEFAULT_POLL_WAIT_MS = 25000;
/** How long after its hold a poll that got no answer is given up. */
const POLL_GRACE_MS = 15000;
/** A poll answered this close to the end of its hold ran the full hold. */
const POLL_FULL_HOLD_SLACK_MS = 250;

/**
 * A client of a toolgate gateway: one session, its tools, and the connection
 * that receives their calls. It is an EventTarget; `on(type, fn)` is a
 * shorthand that passes the event's detail. Events: "state", "transport",
 * "connection", "cut", "session", "call", "registered", "error".
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
  #runner;
  /** The heartbeat asked and the poll hold, learned per gateway (shared by the tabs). */
  #path;
  /** When to probe the stream while polling, and the bound on switching. */
  #switches;
  /** What the connection learned: see ConnectionInfo in toolgate.d.ts (state and transport aside). */
  #info = { heartbeat_ms: null, poll_wait_ms: null, cuts: 0, last_cut: null };
  /** The last "connection" event's detail, as JSON, so that only changes are told. */
  #connectionSaid = "";
  /** The last transport that was live, to count switches. */
  #lastTransport = null;
  /** Whether the shared connection's path was heard since connect(). */
  #pathHeard = false;
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
      sseReadyTimeoutMs: options.sseReadyTimeoutMs ?? 3000,
      sseRetryMs: options.sseRetryMs ?? 60000,
      sseRetryMaxMs: options.sseRetryMaxMs ?? 600000,
      stallTimeoutMs: options.stallTimeoutMs,
      pollWaitMs: options.pollWaitMs,
      reconnectBaseMs: options.reconnectBaseMs ?? RECONNECT_BASE_MS,
      reconnectMaxMs: options.reconnectMaxMs ?? RECONNECT_MAX_MS,
      pathStorage: options.pathStorage,
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
    this.#path = new PathMemory({ baseUrl: this.#opts.baseUrl, storage: this.#opts.pathStorage });
    this.#switches = new TransportSwitches({ probeMs: this.#opts.sseRetryMs, probeMaxMs: this.#opts.sseRetryMaxMs });
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

  /**
   * What the client knows of its connection now (a fresh object each time):
   * state, transport, whether it is the tabs' shared one, the heartbeat of
   * the live stream, the hold of the polls, the cuts and the last one. The
   * "connection" event carries the same whenever it changes.
   * @returns {import("./toolgate.d.ts").ConnectionInfo}
   */
  get connection() {
    return {
      state: this.#state,
      transport: this.#transport,
      shared: this.#shared,
      heartbeat_ms: this.#transport === "sse" ? this.#info.heartbeat_ms : null,
      poll_wait_ms: this.#transport === "poll" ? this.#info.poll_wait_ms : null,
      cuts: this.#info.cuts,
      last_cut: this.#info.last_cut ? { ...this.#info.last_cut } : null,
    };
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
    this.#pathHeard = false;
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
    let climbing = false;
    const policy = new ReconnectPolicy({ baseMs: this.#opts.reconnectBaseMs, maxMs: this.#opts.reconnectMaxMs });
    while (!signal.aborted) {
      try {
        this.#setState(this.#everConnected ? "reconnecting" : "connecting");
        await this.#ensureSession(signal);
        if (this.#shared) await this.#runShared(signal);
        else if (mode === "sse") await this.#runStream(signal, policy);
        else await this.#runPolling(signal, policy);
        // The poll returns when a probe found that the stream gets through.
        climbing = this.#opts.transport === "auto" && mode === "poll";
        if (climbing) mode = "sse";
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
          // A climb the probe allowed whose stream is held back after all:
          // the next probe waits longer.
          if (climbing && this.#transport !== "sse") this.#switches.probeFailed();
          climbing = false;
          this.#emit("error", { error: err, during: "stream" });
          mode = "poll";
          continue;
        }
        climbing = false;
        // A stream that was live and broke (a gateway restart, a network
        // change) is tried again first; only a held-back stream means polling.
        if (this.#opts.transport === "auto" && this.#transport === "sse") mode = "sse";
        this.#setTransport(null);
        this.#setState("reconnecting");
        this.#emit("error", { error: err, during: "connection" });
        // A connection that went live reconnects at once; attempts that
        // never did back off (toolgate-reconnect.js).
        await sleep(policy.delay(err), signal);
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
  async #runStream(signal, policy, onReady) {
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
    let readyAt = 0;
    let lastActivity = 0;
    const stallMs = () => this.#opts.stallTimeoutMs ?? (this.#session?.heartbeatMs ?? 15000) * 2 + 5000;
    const session = this.#session;
    const asked = this.#path.heartbeatMs;
    try {
      await readEventStream({
        fetchFn: this.#fetch,
        url: `${this.#sessionUrl(session)}/events${asked !== null ? `?heartbeat_ms=${asked}` : ""}`,
        token: session.token,
        lastEventId: this.#resumeFromCursor ? this.#cursor : null,
        signal: controller.signal,
        onActivity: () => {
          lastActivity = Date.now();
          if (ready) arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
        },
        onEvent: (ev) => {
          if (ev.type === "ready") {
            ready = true;
            readyAt = Date.now();
            if (Number.isFinite(ev.heartbeat_ms)) session.heartbeatMs = ev.heartbeat_ms;
            this.#info.heartbeat_ms = session.heartbeatMs ?? null;
            arm(stallMs(), "STREAM_STALLED", "The event stream went silent: no event or ping in time");
            this.#switches.streamWorked();
            policy.live();
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
      const failure = heldBack ?? err;
      if (ready && !replaced && !signal.aborted) {
        const now = Date.now();
        const reason = failure?.code === "STREAM_STALLED" ? "stalled" : failure?.code === "STREAM_ENDED" ? "ended" : "reset";
        this.#cut("sse", { afterMs: now - readyAt, reason });
        this.#path.streamCut(now - lastActivity, session.heartbeatMs);
      }
      throw failure;
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
      pathStorage: this.#opts.pathStorage,
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
        onPath: (path) => {
          if (!signal.aborted) this.#tookPath(path);
        },
      });
    });
  }

  /**
   * Long-polls until the signal aborts or an error, holding each poll as
   * long as the path lets it (PathMemory). In auto mode it also probes the
   * stream now and then (TransportSwitches): it returns when a probe found
   * that the stream gets through; against a gateway without the probe it
   * opens the stream itself beside the poll, which carries on once it
   * delivers "ready".
   */
  async #runPolling(signal, policy) {
    const pollController = new AbortController();
    const stopPoll = () => pollController.abort();
    signal.addEventListener("abort", stopPoll, { once: true });
    let probe = null;
    const stopProbing =
      this.#opts.transport === "auto"
        ? probeWhilePolling({
            switches: this.#switches,
            signal: pollController.signal,
            probe: () => {
              const session = this.#session;
              if (!session) return Promise.resolve(null);
              return probeStream({ fetchFn: this.#fetch, baseUrl: this.#opts.baseUrl, sessionId: session.sessionId, token: session.token, signal: pollController.signal, timeoutMs: this.#opts.sseReadyTimeoutMs });
            },
            climb: stopPoll,
            tryStream: () => (probe = this.#runStream(signal, policy, stopPoll)),
            failed: (error) => this.#emit("error", { error, during: "stream-probe" }),
          })
        : () => {};
    // The first poll asks for an answer at once, so the connection counts as
    // live (and connect() resolves) without waiting a whole poll period.
    let first = true;
    try {
      while (!pollController.signal.aborted) {
        const session = this.#session;
        const ceiling = this.#opts.pollWaitMs ?? session.pollWaitMs ?? DEFAULT_POLL_WAIT_MS;
        const waitMs = first ? 0 : this.#path.pollHoldMs(ceiling);
        first = false;
        const held = new AbortController();
        const abortHeld = () => held.abort();
        pollController.signal.addEventListener("abort", abortHeld, { once: true });
        let timedOut = false;
        const giveUp = setTimeout(() => {
          timedOut = true;
          held.abort();
        }, waitMs + POLL_GRACE_MS);
        const startedAt = Date.now();
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
          const failure = timedOut ? new ToolgateError("NETWORK", `The poll got no answer within ${waitMs + POLL_GRACE_MS} ms`) : err;
          const reason = pollCutReason(failure, waitMs, Date.now() - startedAt, timedOut);
          if (reason === null || this.#transport !== "poll") throw failure;
          // A held poll the path cut (a proxy's 502/504, a reset, a timeout):
          // the hold halves for the origin, and the poll is asked again.
          this.#path.pollCut(waitMs);
          this.#cut("poll", { afterMs: Date.now() - startedAt, reason });
          await sleep(policy.delay(failure), pollController.signal);
          continue;
        } finally {
          clearTimeout(giveUp);
          pollController.signal.removeEventListener("abort", abortHeld);
        }
        if (pollController.signal.aborted) break; // the stream took over; it replays these events too
        if (waitMs > 0 && Date.now() - startedAt >= waitMs - POLL_FULL_HOLD_SLACK_MS) this.#path.pollClean(ceiling);
        policy.live();
        this.#info.poll_wait_ms = this.#path.pollHoldMs(ceiling);
        this.#live("poll");
        for (const ev of reply.events) this.#handleEvent(ev);
        this.#pollCursor = reply.cursor;
        this.#persist();
        // Polling again at once would replace the newer connection in turn:
        // the supervisor waits its backoff first.
        if (reply.events.some((ev) => ev.type === "stream_replaced")) throw streamReplaced();
      }
    } finally {
      stopProbing();
      signal.removeEventListener("abort", stopPoll);
    }
    // Polling stopped: the client closes, a probe stream is live, or a probe
    // found that the stream gets through (the supervisor opens it).
    if (probe && !signal.aborted) await probe;
  }

  /** A live connection ended without the gateway saying so: counted and kept as the last cut. */
  #cut(transport, { afterMs, reason }) {
    this.#info.cuts++;
    this.#info.last_cut = { at: new Date().toISOString(), after_ms: Math.round(afterMs), reason, transport };
    this.#emit("cut", { ...this.#info.last_cut });
    this.#emitConnection();
  }

  /** Takes what the shared connection's leader learned of its path (see toolgate-tabs.js). */
  #tookPath(path) {
    // A cut from before this client heard the leader is told in `connection`, not as a "cut" event.
    const before = this.#pathHeard ? this.#info.last_cut : path?.last_cut;
    this.#pathHeard = true;
    this.#info = {
      heartbeat_ms: Number.isFinite(path?.heartbeat_ms) ? path.heartbeat_ms : null,
      poll_wait_ms: Number.isFinite(path?.poll_wait_ms) ? path.poll_wait_ms : null,
      cuts: Number.isInteger(path?.cuts) ? path.cuts : this.#info.cuts,
      last_cut: path?.last_cut && typeof path.last_cut === "object" ? { ...path.last_cut } : null,
    };
    if (this.#info.last_cut && this.#info.last_cut.at !== before?.at) this.#emit("cut", { ...this.#info.last_cut });
    this.#emitConnection();
  }

  #emitConnection() {
    const now = this.connection;
    const said = JSON.stringify(now);
    if (said === this.#connectionSaid) return;
    this.#connectionSaid = said;
    this.#emit("connection", now);
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
    this.#emitConnection();
  }

  #setTransport(transport) {
    if (this.#transport === transport) return;
    if (transport !== null && this.#lastTransport !== null && this.#lastTransport !== transport) this.#switches.switched();
    if (transport !== null) this.#lastTransport = transport;
    this.#transport = transport;
    this.#emit("transport", { transport });
    this.#emitConnection();
  }

  #emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

/** Whether an error means the session no longer exists or its token is refused. */
function isSessionGone(err) {
  // UNAUTHORIZED: the multi-session endpoints' refusal of a bad token, as the multi-session endpoints' spec words it.
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

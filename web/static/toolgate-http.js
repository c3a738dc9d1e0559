// Shared pieces of the toolgate browser SDK: the error types, the JSON request
// helper, backoff and abortable sleeps, and session storage. No DOM is used,
// so the SDK also runs in Node 20 (global fetch, EventTarget, AbortController).

import { retryAfterMs } from "./toolgate-reconnect.js";

/** The tool-level error codes a client may report (docs/PROTOCOL.md, CETP codes). */
export const TOOL_ERROR_CODES = Object.freeze([
  "AUTH_REQUIRED",
  "PERMISSION_DENIED",
  "TOOL_NOT_FOUND",
  "INVALID_ARGS",
  "RATE_LIMITED",
  "INTERNAL_ERROR",
]);

/**
 * An error answered by the gateway: `{"error": {"code", "message", "details"}}`
 * with its HTTP status, or a transport failure (status 0, code "NETWORK").
 */
export class ToolgateError extends Error {
  /**
   * @param {string} code protocol error code, e.g. "CALL_CLOSED"
   * @param {string} message human sentence
   * @param {{status?: number, details?: object, retryAfterMs?: number, cause?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "ToolgateError";
    this.code = code;
    this.status = extra.status ?? 0;
    this.details = extra.details;
    this.retryAfterMs = extra.retryAfterMs;
  }

  /** Whether asking again later may succeed (network trouble, 5xx, 429). */
  get retryable() {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

/**
 * An error a tool handler throws to answer with a specific code, e.g.
 * `throw new ToolError("PERMISSION_DENIED", "Location access was refused", {resolution_hint: "..."})`.
 * Any thrown error with a string `code` property is treated the same way.
 */
export class ToolError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {object} [details]
   */
  constructor(code, message, details) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.details = details;
  }
}

/**
 * Sends one JSON request and returns the parsed reply body.
 * Throws a ToolgateError for an error reply or a network failure.
 * @param {typeof fetch} fetchFn
 * @param {string} url
 * @param {{method?: string, token?: string, body?: unknown, signal?: AbortSignal, headers?: object}} [opts]
 */
export async function requestJSON(fetchFn, url, opts = {}) {
  const headers = { Accept: "application/json", ...opts.headers };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  let body;
  // Every POST is declared JSON, even one with no body: the gateway
  // refuses any other with 415.
  if (opts.body !== undefined || opts.method === "POST") headers["Content-Type"] = "application/json";
  if (opts.body !== undefined) body = JSON.stringify(opts.body);
  let res;
  try {
    res = await fetchFn(url, { method: opts.method ?? "GET", headers, body, signal: opts.signal, cache: "no-store" });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    throw new ToolgateError("NETWORK", `Cannot reach the gateway: ${err?.message ?? err}`, { cause: err });
  }
  const text = await res.text().catch((err) => {
    if (opts.signal?.aborted) throw err;
    throw new ToolgateError("NETWORK", `The reply was cut off: ${err?.message ?? err}`, { status: 0, cause: err });
  });
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      if (res.ok) {
        throw new ToolgateError("BAD_RESPONSE", `The gateway answered ${res.status} with a body that is not JSON`, { status: res.status });
      }
    }
  }
  if (!res.ok) throw errorFromReply(res, data);
  return data;
}

/** Builds a ToolgateError from a non-2xx reply and its parsed body (or null). */
export function errorFromReply(res, data) {
  const e = data && typeof data === "object" ? data.error : undefined;
  return new ToolgateError(
    e?.code ?? `HTTP_${res.status}`,
    e?.message ?? `The gateway answered ${res.status} ${res.statusText}`.trim(),
    {
      status: res.status,
      details: e?.details,
      retryAfterMs: retryAfterMs(res.headers.get("Retry-After") ?? undefined),
    },
  );
}

/**
 * Exponential backoff with full jitter: attempt 0 waits around `baseMs`,
 * each next attempt doubles it, never beyond `maxMs`.
 */
export function backoffDelay(attempt, baseMs = 500, maxMs = 30000) {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 16));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** Resolves after `ms`, or at once (without throwing) when `signal` aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** An in-memory stand-in for Web Storage, used where no storage is given or available. */
export class MemoryStorage {
  #items = new Map();
  getItem(key) {
    return this.#items.has(key) ? this.#items.get(key) : null;
  }
  setItem(key, value) {
    this.#items.set(key, String(value));
  }
  removeItem(key) {
    this.#items.delete(key);
  }
}

/**
 * Picks the storage for the session: the one given, a fresh MemoryStorage for
 * `null`/`false`, and sessionStorage by default where the platform has it.
 */
export function resolveStorage(option) {
  if (option === null || option === false) return new MemoryStorage();
  if (option !== undefined) {
    for (const method of ["getItem", "setItem", "removeItem"]) {
      if (typeof option[method] !== "function") {
        throw new TypeError(`storage must implement getItem, setItem and removeItem (missing ${method})`);
      }
    }
    return option;
  }
  try {
    if (globalThis.sessionStorage) return globalThis.sessionStorage;
  } catch {
    // Access to sessionStorage throws in sandboxed frames; fall back to memory.
  }
  return new MemoryStorage();
}

/**
 * The persisted part of a client: session id, token, event cursor and the
 * answers not yet acknowledged (so a reload re-posts them instead of running
 * the tool again).
 */
export class SessionStore {
  /** @param {Storage} storage @param {string} key */
  constructor(storage, key) {
    this.storage = storage;
    this.key = key;
  }

  /** @returns {{sessionId: string, token: string, cursor: number|null, outbox: object[]}|null} */
  load() {
    let raw;
    try {
      raw = this.storage.getItem(this.key);
    } catch {
      return null;
    }
    if (!raw) return null;
    try {
      const s = JSON.parse(raw);
      if (typeof s.sessionId !== "string" || typeof s.token !== "string") return null;
      return {
        sessionId: s.sessionId,
        token: s.token,
        cursor: Number.isFinite(s.cursor) ? s.cursor : null,
        heartbeatMs: Number.isFinite(s.heartbeatMs) ? s.heartbeatMs : undefined,
        pollWaitMs: Number.isFinite(s.pollWaitMs) ? s.pollWaitMs : undefined,
        outbox: Array.isArray(s.outbox) ? s.outbox : [],
      };
    } catch {
      return null;
    }
  }

  /** Writes the state; storage errors (quota, privacy mode) are ignored. */
  save(state) {
    try {
      this.storage.setItem(this.key, JSON.stringify(state));
    } catch {
      // The session then lives only as long as the page.
    }
  }

  clear() {
    try {
      this.storage.removeItem(this.key);
    } catch {
      // Nothing to clear.
    }
  }
}

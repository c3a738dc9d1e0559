// The two ways a toolgate client receives its events: a Server-Sent Events
// stream and a long-poll. Both deliver the same event objects
// ({seq, type, ...payload}); the client in toolgate.js decides which to use.
//
// The stream is read with fetch + ReadableStream rather than EventSource:
// fetch can send the session token in the Authorization header (so it never
// lands in proxy logs as ?access_token=), lets the client decide when and with
// which cursor to reconnect instead of EventSource's own retry loop, lets it
// notice a stream a proxy holds back (no `ready`, no pings) and abort it, and
// works in Node 20, which has fetch but no EventSource.

import { ToolgateError, errorFromReply, requestJSON } from "./toolgate-http.js";

/**
 * An incremental parser of the text/event-stream format (WHATWG HTML,
 * "Server-sent events"): feed it decoded text, get complete events back.
 */
export class SSEParser {
  #buffer = "";
  #data = [];
  #event = "";
  #id = null;
  #firstChunk = true;
  #skipLF = false;

  /**
   * @param {string} text the next piece of the stream
   * @returns {{event: string, data: string, id: string|null, retry?: number}[]}
   */
  push(text) {
    if (this.#firstChunk && text.length > 0) {
      this.#firstChunk = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    // A "\r" that ended the previous piece may have been the first half of "\r\n".
    if (this.#skipLF && text.startsWith("\n")) text = text.slice(1);
    this.#skipLF = false;
    this.#buffer += text;
    const out = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      if (!match) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      if (match[0] === "\r" && this.#buffer === "") this.#skipLF = true;
      const ev = this.#line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  #line(line) {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return null; // comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.#data.push(value);
        break;
      case "event":
        this.#event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.#id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
    return null;
  }

  #dispatch() {
    const ev = { event: this.#event || "message", data: this.#data.join("\n"), id: this.#id };
    const hadData = this.#data.length > 0;
    this.#data = [];
    this.#event = "";
    this.#id = null;
    return hadData ? ev : null;
  }
}

/**
 * Turns one parsed SSE event into the protocol's event object. The JSON data
 * carries `type`; the `id:` line, when present, is the event's cursor `seq`.
 * Returns null for data that is not a JSON object.
 */
export function decodeStreamEvent(raw) {
  let payload;
  try {
    payload = JSON.parse(raw.data);
  } catch {
    return null;
  }
  if (!payload || typeof payload !== "object" || Array.isArray(payload)) return null;
  const ev = { ...payload, type: payload.type ?? raw.event };
  if (raw.id !== null && raw.id !== "" && Number.isFinite(Number(raw.id))) ev.seq = Number(raw.id);
  return ev;
}

/**
 * Reads an event stream until it ends, the signal aborts, or it fails: a
 * session's (GET with its token and cursor) or, given `body`, the
 * multi-session stream (POST with a JSON body that carries the tokens).
 * Every received byte calls `onActivity` (so the caller can watch for
 * stalls) and every complete event calls `onEvent`.
 * @param {{fetchFn: typeof fetch, url: string, token?: string, lastEventId?: number|null, body?: object,
 *          signal: AbortSignal, onEvent: (ev: object) => void, onActivity: () => void}} opts
 * @returns {Promise<void>} resolves when the server ends the stream
 */
export async function readEventStream(opts) {
  const headers = { Accept: "text/event-stream" };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  if (opts.lastEventId !== null && opts.lastEventId !== undefined) headers["Last-Event-ID"] = String(opts.lastEventId);
  const init = { headers, signal: opts.signal, cache: "no-store" };
  if (opts.body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await opts.fetchFn(opts.url, init);
  } catch (err) {
    if (opts.signal.aborted) throw err;
    throw new ToolgateError("NETWORK", `Cannot open the event stream: ${err?.message ?? err}`, { cause: err });
  }
  if (!res.ok) {
    let data = null;
    try {
      data = JSON.parse(await res.text());
    } catch {
      // keep data null: the status alone explains the failure
    }
    throw errorFromReply(res, data);
  }
  const type = res.headers.get("Content-Type") ?? "";
  if (!type.startsWith("text/event-stream")) {
    throw new ToolgateError("BAD_RESPONSE", `The event stream answered with Content-Type "${type}"`, { status: res.status });
  }
  opts.onActivity();
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      opts.onActivity();
      for (const raw of parser.push(decoder.decode(value, { stream: true }))) {
        const ev = decodeStreamEvent(raw);
        if (ev) opts.onEvent(ev);
      }
    }
  } catch (err) {
    if (opts.signal.aborted) throw err;
    throw new ToolgateError("NETWORK", `The event stream broke: ${err?.message ?? err}`, { cause: err });
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * Turns one entry of a poll reply into the same shape as a stream event.
 * The protocol flattens the payload next to `seq`; an entry that nests it
 * under `data` is accepted too.
 */
export function decodePollEvent(entry) {
  if (!entry || typeof entry !== "object") return null;
  let data = entry.data;
  if (typeof data === "string") {
    try {
      data = JSON.parse(data);
    } catch {
      data = null;
    }
  }
  const ev = data && typeof data === "object" && !Array.isArray(data) ? { ...data, ...entry } : { ...entry };
  delete ev.data;
  if (data && typeof data === "object" && data.type) ev.type = data.type;
  return ev.type ? ev : null;
}

/**
 * One long-poll: asks for the session's events after `cursor` (or, without a
 * cursor, its open calls), holding up to `waitMs`.
 * @returns {Promise<{events: object[], cursor: number|null}>}
 */
export async function pollEvents({ fetchFn, baseUrl, sessionId, token, cursor, waitMs, signal }) {
  const params = new URLSearchParams({ wait_ms: String(waitMs) });
  if (cursor !== null && cursor !== undefined) params.set("cursor", String(cursor));
  const url = `${baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/poll?${params}`;
  const body = await requestJSON(fetchFn, url, { token, signal });
  if (!body || !Array.isArray(body.events)) {
    throw new ToolgateError("BAD_RESPONSE", "The poll reply has no events list");
  }
  const events = body.events.map(decodePollEvent).filter(Boolean);
  const next = Number.isFinite(body.cursor) ? body.cursor : cursor ?? null;
  return { events, cursor: next };
}

/** How much earlier than the end the probe's first step must arrive for the path to count as streaming. */
export const PROBE_GAP_MS = 250;

/**
 * Asks the gateway's stream probe (`GET /v1/sessions/{sid}/probe`) whether
 * the path between here and the gateway lets a stream through: the gateway
 * sends a first step at once and a second 500 ms later; a path that streams
 * delivers the first well before the end, a buffering one both at once.
 * Resolves "streams", "buffered" (also: no answer within `timeoutMs`),
 * "unknown" when the gateway has no probe (404, 405: an earlier version), or
 * "busy" when a probe of the session runs already (409). Other failures
 * (network, 5xx) reject.
 * @param {{fetchFn: typeof fetch, baseUrl: string, sessionId: string, token: string,
 *          signal?: AbortSignal, timeoutMs?: number, now?: () => number}} opts
 * @returns {Promise<"streams"|"buffered"|"unknown"|"busy">}
 */
export async function probeStream({ fetchFn, baseUrl, sessionId, token, signal, timeoutMs = 5000, now = Date.now }) {
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal?.addEventListener("abort", stop, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  let firstAt = null;
  try {
    await readEventStream({
      fetchFn,
      url: `${baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/probe`,
      token,
      signal: controller.signal,
      onActivity: () => {},
      onEvent: (ev) => {
        // Both steps' data say {"type": "probe", "step": n}; the first comes as `event: ready`.
        if (ev.step === 1 && firstAt === null) firstAt = now();
      },
    });
    return firstAt !== null && now() - firstAt >= PROBE_GAP_MS ? "streams" : "buffered";
  } catch (err) {
    if (timedOut) return "buffered";
    if (err instanceof ToolgateError && err.status === 409) return "busy";
    if (err instanceof ToolgateError && (err.status === 404 || err.status === 405)) return "unknown";
    throw err;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
  }
}

/**
 * While a connection polls, probes the stream now and then: after
 * `switches.probeDelayMs`, when `switches.mayClimb()`, it asks `probe()`
 * (probeStream for a session the connection carries, or null when it
 * carries none now) and then calls `climb()` when the path streams,
 * `tryStream()` (opening the stream beside the poll, a promise that rejects
 * when it fails) against a gateway without the probe, or `failed(error)`
 * when the path still holds streams back, and probes again later. It stops
 * when `signal` aborts, or when the returned function is called.
 * @param {{switches: import("./toolgate-reconnect.js").TransportSwitches, signal: AbortSignal,
 *          probe: () => Promise<string|null>, climb: () => void, tryStream: () => Promise<void>,
 *          failed: (error: Error) => void}} opts
 * @returns {() => void}
 */
export function probeWhilePolling({ switches, signal, probe, climb, tryStream, failed }) {
  let timer = null;
  const schedule = () => {
    if (!signal.aborted) timer = setTimeout(run, switches.probeDelayMs);
  };
  const fail = (error) => {
    if (signal.aborted) return;
    switches.probeFailed();
    failed(error);
    schedule();
  };
  async function run() {
    if (!switches.mayClimb()) return schedule();
    let verdict;
    try {
      verdict = await probe();
    } catch (error) {
      return fail(error);
    }
    if (signal.aborted) return;
    if (verdict === "streams") return climb();
    if (verdict === "unknown") return tryStream().catch(fail);
    if (verdict === null || verdict === "busy") return schedule();
    fail(new ToolgateError("STREAM_NOT_READY", "The stream probe came through all at once: the path still holds streams back"));
  }
  schedule();
  return () => clearTimeout(timer);
}

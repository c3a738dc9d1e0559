// When a client of the browser SDK connects again, and over which transport:
// one reconnect policy for every connection it holds (a client's own stream
// or poll, the shared lanes of toolgate-lane.js), and the bound on switching
// between the stream and the poll. The rules are in docs/PROTOCOL.md, "Keep-alive
// and reconnection (clients)":
//   - a connection that went live (a stream's `ready`, a poll's reply) and
//     then broke is tried again at once, with 0-250 ms of jitter;
//   - attempts that never went live back off, 250 ms * 2^(n-1) capped at
//     10 s, with full jitter;
//   - a Retry-After is obeyed as the least wait;
//   - a connection replaced by a newer one of its session backs off.
// Clocks and randomness are parameters, so tests drive them.

/** The jitter before reconnecting a connection that went live. */
export const LIVE_JITTER_MS = 250;
/** The first step of the backoff of attempts that never went live. */
export const RECONNECT_BASE_MS = 250;
/** The longest backoff. */
export const RECONNECT_MAX_MS = 10000;

/**
 * The wait before each attempt of one connection. Tell it `live()` when an
 * attempt went live; ask `delay(error)` after each attempt ended.
 */
export class ReconnectPolicy {
  /** Attempts in a row that never went live. */
  failures = 0;
  #wentLive = false;
  #baseMs;
  #maxMs;
  #random;

  /** @param {{baseMs?: number, maxMs?: number, random?: () => number}} [opts] */
  constructor({ baseMs = RECONNECT_BASE_MS, maxMs = RECONNECT_MAX_MS, random = Math.random } = {}) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
    this.#random = random;
  }

  /**
   * The current attempt went live: once it ends, the failures in a row are
   * forgotten (unless a newer connection of the session replaced it).
   */
  live() {
    this.#wentLive = true;
  }

  /**
   * The wait (ms) before the next attempt, now that the current one ended
   * with `error`: a little jitter after a live connection, the backoff
   * after one that never went live, and at least the error's Retry-After.
   */
  delay(error) {
    let wait;
    // A connection a newer one of the same session replaced backs off like
    // one that never went live: reconnecting at once would replace that one
    // in turn, and the two would spin.
    if (this.#wentLive && error?.code !== "STREAM_REPLACED") {
      this.failures = 0;
      wait = this.#random() * LIVE_JITTER_MS;
    } else {
      const ceiling = Math.min(this.#maxMs, this.#baseMs * 2 ** Math.min(this.failures, 20));
      wait = this.#random() * ceiling;
      this.failures++;
    }
    this.#wentLive = false;
    const retryAfter = error?.retryAfterMs;
    if (Number.isFinite(retryAfter) && retryAfter > wait) wait = retryAfter;
    return Math.round(wait);
  }
}

/**
 * A Retry-After header's wait in ms (delta-seconds or an HTTP date, RFC
 * 9110 section 10.2.3), or undefined when absent, malformed or past.
 */
export function retryAfterMs(header, now = Date.now()) {
  if (typeof header !== "string" || header.trim() === "") return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) {
    const seconds = Number(value);
    return seconds > 0 ? seconds * 1000 : undefined;
  }
  const at = Date.parse(value);
  if (!Number.isFinite(at) || at <= now) return undefined;
  return at - now;
}

/** Switches between the stream and the poll allowed in SWITCH_WINDOW_MS. */
export const MAX_SWITCHES = 4;
/** The window of MAX_SWITCHES. */
export const SWITCH_WINDOW_MS = 10 * 60 * 1000;

/**
 * The transport switches of one connection: when to probe the stream while
 * polling (every `probeMs`, doubled after each failed probe up to
 * `probeMaxMs`), and whether climbing back to the stream is allowed now —
 * never more than MAX_SWITCHES switches in SWITCH_WINDOW_MS, counting the
 * fall back to the poll a failed climb may need (which is always allowed:
 * a stream held back delivers nothing).
 */
export class TransportSwitches {
  #at = [];
  #probeMs;
  #probeBaseMs;
  #probeMaxMs;
  #now;

  /** @param {{probeMs: number, probeMaxMs: number, now?: () => number}} opts */
  constructor({ probeMs, probeMaxMs, now = Date.now }) {
    this.#probeBaseMs = probeMs;
    this.#probeMs = probeMs;
    this.#probeMaxMs = Math.max(probeMs, probeMaxMs);
    this.#now = now;
  }

  /** The wait before the next probe of the stream. */
  get probeDelayMs() {
    return this.#probeMs;
  }

  /** A switch happened (stream to poll, or back). */
  switched() {
    this.#at.push(this.#now());
    this.#trim();
  }

  /** How many switches the window holds now. */
  get recent() {
    this.#trim();
    return this.#at.length;
  }

  /** Whether a climb back to the stream (and, should it fail, the fall back) stays within the bound. */
  mayClimb() {
    return this.recent + 2 <= MAX_SWITCHES;
  }

  /** A probe said the stream does not get through: the next one waits twice as long. */
  probeFailed() {
    this.#probeMs = Math.min(this.#probeMs * 2, this.#probeMaxMs);
  }

  /** A stream got through: probes start again from the first interval. */
  streamWorked() {
    this.#probeMs = this.#probeBaseMs;
  }

  #trim() {
    const since = this.#now() - SWITCH_WINDOW_MS;
    while (this.#at.length > 0 && this.#at[0] <= since) this.#at.shift();
  }
}

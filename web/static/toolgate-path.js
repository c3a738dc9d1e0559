// What a client learned about the network path to its gateway, kept per
// gateway in localStorage so that every tab of the origin (and the next
// page) shares it: the heartbeat to ask for when a proxy cuts idle streams,
// and the hold of a long-poll when a proxy answers held polls 502/504 or
// cuts them. docs/PROTOCOL.md ("Keep-alive and reconnection (clients)") has the rules:
//   - two live streams in a row cut after similar idle times (within 25 %),
//     each shorter than the heartbeat in use (its ping would have come too
//     late), make the client ask for heartbeat_ms = max(1000, 0.4 * the
//     smaller idle time);
//   - a held poll answered 502/503/504, reset or timed out halves the hold
//     (floor 1000 ms); each clean poll that ran its full hold grows it
//     x1.25, up to the gateway's poll wait (or the page's).

import { MemoryStorage } from "./toolgate-http.js";

/** The shortest heartbeat a client asks for, and the shortest hold of a poll. */
export const MIN_HEARTBEAT_MS = 1000;
export const MIN_POLL_HOLD_MS = 1000;
/** How long a learned heartbeat is kept without a cut confirming it. */
export const HEARTBEAT_KEPT_MS = 24 * 60 * 60 * 1000;
/** How far apart two cuts may be (in time) and still count as "in a row". */
const CUT_PAIR_WINDOW_MS = 10 * 60 * 1000;
/** Cuts of a stream idle for less than this are not idle cuts (a restart, a network change). */
const MIN_IDLE_CUT_MS = 1000;

/** The memory of each gateway's path in this page, where localStorage is missing (Node). */
const inMemory = new MemoryStorage();

/** The storage paths are kept in: localStorage where the platform has it, else one memory for the process. */
export function pathStorage(option) {
  if (option) return option;
  try {
    if (globalThis.localStorage) return globalThis.localStorage;
  } catch {
    // Access to localStorage throws in sandboxed frames.
  }
  return inMemory;
}

/**
 * The learned path to one gateway. Every read goes to storage, so what one
 * tab learns the next connection of another tab uses.
 */
export class PathMemory {
  #storage;
  #key;
  #now;

  /** @param {{baseUrl: string, storage?: Storage, now?: () => number}} opts */
  constructor({ baseUrl, storage, now = Date.now }) {
    this.#storage = pathStorage(storage);
    this.#key = `toolgate-path:${baseUrl}`;
    this.#now = now;
  }

  /** The heartbeat (ms) to ask for on the next stream, or null to take the gateway's. */
  get heartbeatMs() {
    const p = this.#load();
    if (!Number.isFinite(p.heartbeatMs)) return null;
    if (this.#now() - (p.heartbeatAt ?? 0) > HEARTBEAT_KEPT_MS) return null;
    return p.heartbeatMs;
  }

  /**
   * A live stream was cut, `idleMs` after the last byte it delivered, while
   * its heartbeat was `heartbeatMs`. Returns the heartbeat asked from now
   * on when this cut changed it, else null.
   */
  streamCut(idleMs, heartbeatMs) {
    const p = this.#load();
    const now = this.#now();
    const idleCut = idleMs >= MIN_IDLE_CUT_MS && (!Number.isFinite(heartbeatMs) || idleMs < heartbeatMs);
    if (!idleCut) {
      // Not a cut a shorter heartbeat prevents: the pair starts over.
      delete p.lastIdleCut;
      this.#save(p);
      return null;
    }
    const before = p.lastIdleCut;
    p.lastIdleCut = { idleMs, at: now };
    let changed = null;
    if (before && now - before.at <= CUT_PAIR_WINDOW_MS && similar(before.idleMs, idleMs)) {
      const ask = Math.max(MIN_HEARTBEAT_MS, Math.floor(0.4 * Math.min(before.idleMs, idleMs)));
      const current = this.heartbeatMs;
      if (current === null || ask < current) changed = ask;
      p.heartbeatMs = changed ?? current;
      p.heartbeatAt = now;
      delete p.lastIdleCut;
    }
    this.#save(p);
    return changed;
  }

  /** The hold to ask of the next poll, at most `ceilingMs` (the gateway's or the page's poll wait). */
  pollHoldMs(ceilingMs) {
    const hold = this.#load().pollHoldMs;
    return Number.isFinite(hold) ? Math.min(hold, ceilingMs) : ceilingMs;
  }

  /** A poll held `heldMs` was cut (502/503/504, a reset, a timeout): the hold halves. Returns the new hold. */
  pollCut(heldMs) {
    const p = this.#load();
    const current = Number.isFinite(p.pollHoldMs) ? Math.min(p.pollHoldMs, heldMs) : heldMs;
    p.pollHoldMs = Math.max(MIN_POLL_HOLD_MS, Math.floor(current / 2));
    this.#save(p);
    return p.pollHoldMs;
  }

  /** A poll ran its full hold and was answered: the hold grows back toward `ceilingMs`. */
  pollClean(ceilingMs) {
    const p = this.#load();
    if (!Number.isFinite(p.pollHoldMs)) return;
    const grown = Math.ceil(p.pollHoldMs * 1.25);
    if (grown >= ceilingMs) delete p.pollHoldMs;
    else p.pollHoldMs = grown;
    this.#save(p);
  }

  #load() {
    try {
      const raw = this.#storage.getItem(this.#key);
      const p = raw ? JSON.parse(raw) : {};
      return p && typeof p === "object" && !Array.isArray(p) ? p : {};
    } catch {
      return {};
    }
  }

  #save(p) {
    try {
      this.#storage.setItem(this.#key, JSON.stringify(p));
    } catch {
      // Quota or privacy mode: the path is learned again by each page.
    }
  }
}

/** Whether two idle times are within 25 % of each other. */
function similar(a, b) {
  return Math.abs(a - b) <= 0.25 * Math.max(a, b);
}

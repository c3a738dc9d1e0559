// The connection of the leading tab (see toolgate-tabs.js): it carries the
// events of every tab's session. The gateway takes at most
// `--max-sessions-per-stream` (default 64) sessions on one stream or poll, so
// the sessions are split into lanes of at most that many, each one stream
// (or poll) of its own (toolgate-lane.js). The limit is learned from the
// gateway's refusals (a 400 on an open or poll, a 409 on a join); one
// session too many moves to another lane and never disturbs the others.

import { SessionLane } from "./toolgate-lane.js";

/** The gateway's default `--max-sessions-per-stream`, used until it says otherwise. */
export const DEFAULT_SESSION_LIMIT = 64;

/**
 * Every session the leading tab carries, over as many lanes as the limit
 * needs. It is told which sessions to carry (add, remove) and reports
 * through its callbacks: `deliver(sessionId, ev)` for each event of a
 * session, `refuse(session, error)` when the gateway refuses a session or
 * the session ended (it is no longer carried), `unavailable(error)` when
 * the gateway has no multi-session endpoints, `changed()` when a transport
 * or the set of live sessions changed, and `problem(error, during)` for the
 * trouble the client's "error" event reports.
 */
export class MultiSessionConnection {
  /** @type {Map<string, import("./toolgate-lane.js").CarriedSession>} */
  sessions = new Map();
  /** The most sessions one lane carries. */
  limit = DEFAULT_SESSION_LIMIT;
  /** @type {SessionLane[]} */
  #lanes = [];
  /** The run of each lane: lane -> AbortController. */
  #running = new Map();
  #signal = null;
  /** Set when the gateway has no multi-session endpoints: every session is refused with it. */
  #unavailable = null;
  #opts;

  /** @param {object} opts the lanes' options (see SessionLane) and the callbacks above */
  constructor(opts) {
    this.#opts = opts;
  }

  /** The transport of the first live lane ("sse" or "poll"), or null when none is live. */
  get transport() {
    return this.#lanes.find((lane) => lane.transport)?.transport ?? null;
  }

  /** The ids of the sessions live on a lane's connection. */
  get joined() {
    return this.#lanes.flatMap((lane) => lane.joined);
  }

  /** How many lanes (streams or polls) carry the sessions. */
  get laneCount() {
    return this.#lanes.filter((lane) => lane.sessions.size > 0).length;
  }

  /**
   * What the connection learned of its path (see ConnectionInfo in
   * toolgate.d.ts): the live lane's, else the first lane's; null with no lane.
   */
  get path() {
    const lane = this.#lanes.find((l) => l.transport) ?? this.#lanes[0];
    return lane ? lane.info : null;
  }

  /** The transport a session is live on, or null. */
  transportOf(sessionId) {
    const s = this.sessions.get(sessionId);
    return s?.lane?.carries(s) ? s.lane.transport : null;
  }

  /**
   * Carries a session (again): a session already carried takes the new
   * owner, token and, when given, cursor; it is joined to its lane's stream.
   */
  add({ sessionId, token, cursor, owner }) {
    if (this.#unavailable) {
      const error = this.#unavailable;
      queueMicrotask(() => this.#opts.refuse({ sessionId, token, owner }, error));
      return;
    }
    let s = this.sessions.get(sessionId);
    if (s && s.token !== token) {
      this.#drop(s);
      s = undefined;
    }
    const fresh = !s;
    if (fresh) {
      s = { sessionId, token, owner, cursor: null, pollCursor: null, joinedOn: null, joining: null, lane: null, resting: false, replacements: 0, replacedAt: 0 };
      this.sessions.set(sessionId, s);
    }
    s.owner = owner;
    if (fresh || (Number.isFinite(cursor) && (s.cursor === null || cursor > s.cursor))) {
      s.cursor = Number.isFinite(cursor) ? cursor : null;
      s.pollCursor = null;
    }
    if (s.lane) s.lane.add(s);
    else this.#place(s);
  }

  /** Stops carrying a session, if `owner` (when given) is still the one that announced it. */
  remove(sessionId, owner) {
    const s = this.sessions.get(sessionId);
    if (!s || (owner !== undefined && s.owner !== owner)) return;
    this.#drop(s);
    this.#opts.changed();
  }

  /** Runs every lane until the signal aborts. */
  async run(signal) {
    this.#signal = signal;
    for (const lane of this.#lanes) this.#start(lane);
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    this.#running.clear();
  }

  #drop(s) {
    this.sessions.delete(s.sessionId);
    const lane = s.lane;
    lane?.remove(s);
    if (lane) this.#retireIfEmpty(lane);
  }

  /** Puts a session on the first lane with room (other than `avoid`), or on a new lane. */
  #place(s, avoid = null) {
    let lane = this.#lanes.find((l) => l !== avoid && l.sessions.size < this.limit);
    if (!lane) {
      lane = this.#newLane();
      this.#lanes.push(lane);
      this.#start(lane);
    }
    lane.add(s);
  }

  #newLane() {
    return new SessionLane({
      ...this.#opts,
      refuse: (s, error) => {
        if (this.sessions.get(s.sessionId) === s) this.sessions.delete(s.sessionId);
        this.#opts.refuse(s, error);
        const lane = this.#lanes.find((l) => l.sessions.size === 0);
        if (lane) this.#retireIfEmpty(lane);
      },
      full: (lane, limit, refused) => this.#full(lane, limit, refused),
      unavailable: (error) => this.#sharingUnavailable(error),
    });
  }

  /** The gateway cannot carry several sessions on one connection: every session is refused, every lane stops. */
  #sharingUnavailable(error) {
    if (this.#unavailable) return;
    this.#unavailable = error;
    for (const controller of this.#running.values()) controller.abort();
    this.#running.clear();
    this.#lanes = [];
    const carried = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of carried) this.#opts.refuse(s, error);
    this.#opts.unavailable?.(error);
    this.#opts.changed();
  }

  /**
   * The gateway took fewer sessions on `lane` than it was given: the limit
   * is lowered to what it said, and the sessions beyond it (and `refused`,
   * the one a full stream did not take) move to other lanes.
   */
  #full(lane, limit, refused) {
    this.limit = Math.max(1, Math.min(this.limit, limit));
    const moving = refused && lane.sessions.get(refused.sessionId) === refused ? [refused] : [];
    // The sessions not yet live move first; the others stay where they are.
    const rest = [...lane.sessions.values()].filter((s) => s !== refused).sort((a, b) => Number(lane.carries(b)) - Number(lane.carries(a)));
    moving.push(...rest.slice(this.limit));
    for (const s of moving) {
      lane.remove(s);
      this.#place(s, lane);
    }
    this.#opts.changed();
  }

  #start(lane) {
    if (this.#unavailable || !this.#signal || this.#signal.aborted || this.#running.has(lane)) return;
    const controller = new AbortController();
    const stop = () => controller.abort();
    this.#signal.addEventListener("abort", stop, { once: true });
    this.#running.set(lane, controller);
    lane.run(controller.signal).finally(() => {
      this.#signal?.removeEventListener("abort", stop);
      if (this.#running.get(lane) === controller) this.#running.delete(lane);
    });
  }

  /** A lane left with no session stops, unless it is the only one (it then waits for sessions). */
  #retireIfEmpty(lane) {
    if (lane.sessions.size > 0 || this.#lanes.length === 1) return;
    this.#lanes.splice(this.#lanes.indexOf(lane), 1);
    this.#running.get(lane)?.abort();
    this.#running.delete(lane);
  }
}

// One long-lived request per browser, not per tab. A browser opens at most 6
// HTTP/1.1 connections to one host, so an event stream per tab runs out of
// them with a handful of tabs. Instead, the tabs of an origin elect one
// (the leader) with the Web Lock "toolgate-leader:<baseUrl>"; it holds one
// connection that carries every tab's session (toolgate-multi.js) and passes
// each event on over the BroadcastChannel "toolgate:<baseUrl>". Answers,
// progress and registrations stay each client's own short requests.
//
// One TabCoordinator per page and gateway, shared by the page's clients.
// The messages on the channel (every one has `type` and `from`, the sending
// page's random id):
//   join     {sessionId, token, cursor, keepalive}
//                                        a client carries its session; the leader adds it
//   leave    {sessionId, token}          a client stopped (close, pagehide); the leader drops it
//   alive    {sessions}                  a page with clients is alive, every KEEPALIVE_MS (and
//                                        in answer to the leader's heartbeat); the leader drops
//                                        the sessions of a page silent for PAGE_SILENCE_MS (a
//                                        crashed tab, or one discarded while frozen, says no
//                                        leave). Pages whose joins lack `keepalive` (earlier
//                                        versions) send none and are never dropped.
//   roll_call {term}                     a new leader asks every page to send its joins again
//   leader   {term, live, known, path, transport, joined}
//                                        the leader, every second and on each change: each
//                                        live session's transport, the sessions it knows of,
//                                        what the connection learned of its path (heartbeat,
//                                        poll hold, cuts: ConnectionInfo in toolgate.d.ts)
//                                        (transport and joined: for pages of earlier versions)
// A leader's term {n, page} is taken when it gets the lock: one more than the
// highest term its page has heard (pages report theirs in join and alive; a
// new leader takes a term above a higher one reported in its first moments).
// Pages ignore leader messages of a term below the highest they heard (a
// leader whose lock was just stolen) while that term's leader talks, and a
// leader that hears a higher term steps down. Messages of the wrong form are ignored.
//   probe                                a page that has not heard the leader for a while asks
//                                        it to answer with a `leader` message at once
//   event    {sessionId, event}          an event of a session, for the page that owns it
//   refused  {sessionId, to, error}      the gateway refused a session, or it ended
//   unavailable {error}                  the gateway cannot carry several sessions on one
//                                        connection (404/405 on its endpoints): every page's
//                                        clients use a connection of their own
// A page whose leader is silent for LEADER_SILENCE_MS (and then for a probe)
// takes the lock with `steal: true`: a frozen tab keeps its locks.

import { ToolgateError } from "./toolgate-http.js";
import { MultiSessionConnection } from "./toolgate-multi.js";

/** How often the leader says it is alive. */
export const LEADER_HEARTBEAT_MS = 1000;
/** Silence of the leader after which a page probes it, then takes over. */
export const LEADER_SILENCE_MS = 3000;
/** How long a probed leader has to answer. */
const PROBE_WAIT_MS = 500;
/** How long a new leader gathers the pages' joins before it opens its connection. */
const GATHER_MS = 150;
/** How often a page with clients tells the leader it is alive. */
export const KEEPALIVE_MS = 2000;
/** Silence of a page after which the leader drops its sessions (and at least as many of its own heartbeats). */
export const PAGE_SILENCE_MS = 3 * KEEPALIVE_MS;
const PAGE_SILENCE_BEATS = 3;
/** How long a new leader takes a term above one the pages report (it had not heard it). */
const TERM_ADOPTION_MS = 2 * LEADER_HEARTBEAT_MS;
/** A page sends its join again when the leader has not listed its session for this long. */
const REANNOUNCE_MS = 2000;

/** Whether this platform can share one connection between tabs (Web Locks and BroadcastChannel). */
export function canShareConnection(scope = globalThis) {
  return typeof scope.navigator?.locks?.request === "function" && typeof scope.BroadcastChannel === "function";
}

/** The page's coordinators, by gateway. */
const coordinators = new Map();

/**
 * The coordinator of this page for `baseUrl`, made on first use with the
 * connection options of the first client that asks (its fetch and timeouts
 * are the ones used while this page leads).
 */
export function tabCoordinator(baseUrl, connectionOptions) {
  let coordinator = coordinators.get(baseUrl);
  if (!coordinator) {
    coordinator = new TabCoordinator({ baseUrl, ...connectionOptions });
    coordinators.set(baseUrl, coordinator);
  }
  return coordinator;
}

/**
 * Elects the leading tab and passes events between tabs. Clients attach a
 * member per session: `{sessionId, token, cursor(), onEvent(ev),
 * onStatus(transport|null), onRefused(error), onProblem(error, during)}`.
 */
export class TabCoordinator {
  #opts;
  #locks;
  #channel;
  #lockName;
  #pageId = randomId();
  /** This page's members, by session id. */
  #members = new Map();
  /** The lock request in flight or granted: {abort, release, granted}. */
  #request = null;
  /** While this page leads: {connection, abort, heartbeat}. */
  #lead = null;
  #lastLeaderHeard = 0;
  #probedAt = 0;
  #watchdog = null;
  /** The latest leader's term this page knows of ({n, page}); a new leader takes the next. */
  #highestTerm = { n: 0, page: "" };
  /** When the leader of #highestTerm was last heard. */
  #highestTermHeardAt = 0;
  #aliveSaidAt = 0;
  #hidden = false;
  #frozen = false;
  /**
   * The SHARING_UNAVAILABLE error once the lock cannot be had here or the
   * gateway cannot carry several sessions: members are told to connect on their own.
   */
  #broken = null;
  /** Each member's last status given, so a member hears only changes. */
  #statusGiven = new Map();
  /** Each member's last path given (as JSON), likewise. */
  #pathGiven = new Map();

  /**
   * @param {{baseUrl: string, fetchFn: typeof fetch, locks?: LockManager, BroadcastChannel?: typeof BroadcastChannel,
   *          page?: EventTarget|null} & object} opts the connection's options (see MultiSessionConnection),
   *          and, for tests, the lock manager, channel class and page to use instead of the platform's
   */
  constructor(opts) {
    this.#opts = opts;
    this.#locks = opts.locks ?? globalThis.navigator.locks;
    const Channel = opts.BroadcastChannel ?? globalThis.BroadcastChannel;
    this.#channel = new Channel(`toolgate:${opts.baseUrl}`);
    this.#channel.onmessage = (event) => this.#onMessage(event.data);
    this.#lockName = `toolgate-leader:${opts.baseUrl}`;
    const page = opts.page === undefined ? (typeof globalThis.addEventListener === "function" ? globalThis : null) : opts.page;
    page?.addEventListener("pagehide", () => this.#onPageHide());
    page?.addEventListener("pageshow", (event) => event.persisted && this.#onPageBack());
    page?.addEventListener("freeze", () => this.#onFreeze());
    page?.addEventListener("resume", () => this.#onPageBack());
  }

  /** Stops taking part: lets go of the lock and closes the channel (tests; a page simply goes). */
  dispose() {
    this.#members.clear();
    this.#resign();
    this.#stopWatchdog();
    this.#channel.close();
    if (coordinators.get(this.#opts.baseUrl) === this) coordinators.delete(this.#opts.baseUrl);
  }

  /** Whether this page leads now. */
  get leading() {
    return this.#lead !== null;
  }

  /**
   * Carries a member's session on the browser's connection until detach().
   * @returns {{detach: () => void}}
   */
  attach(member) {
    if (this.#broken) {
      const error = this.#broken;
      queueMicrotask(() => member.onRefused(error));
      return { detach: () => {} };
    }
    this.#members.set(member.sessionId, member);
    this.#statusGiven.delete(member);
    this.#pathGiven.delete(member);
    this.#announce(member, member.cursor());
    this.#lastLeaderHeard = Math.max(this.#lastLeaderHeard, Date.now());
    this.#campaign();
    this.#startWatchdog();
    if (this.#lead) this.#giveStatuses();
    return {
      detach: () => {
        if (this.#members.get(member.sessionId) !== member) return;
        this.#members.delete(member.sessionId);
        this.#statusGiven.delete(member);
        this.#pathGiven.delete(member);
        this.#sayLeave(member);
        if (this.#members.size === 0) {
          this.#resign();
          this.#stopWatchdog();
        }
      },
    };
  }

  // --- the lock -------------------------------------------------------------------

  get #wantsToLead() {
    return !this.#broken && this.#members.size > 0 && !this.#hidden && !this.#frozen;
  }

  /** Asks for the leader's lock (waiting in line) unless asked already. */
  #campaign() {
    if (this.#request || !this.#wantsToLead) return;
    this.#requestLock(false);
  }

  #requestLock(steal) {
    const request = { abort: steal ? null : new AbortController(), release: null };
    this.#request = request;
    const options = steal ? { steal: true } : { signal: request.abort.signal };
    let granted;
    try {
      granted = this.#locks.request(this.#lockName, options, () => {
        if (this.#request !== request || !this.#wantsToLead) return undefined;
        return new Promise((release) => {
          request.release = release;
          this.#startLeading(request);
        });
      });
    } catch {
      granted = Promise.reject(new Error("no lock"));
    }
    granted
      .catch((error) => {
        // A wait given up, or the lock stolen by a page that found this one
        // silent, is an AbortError; anything else (a SecurityError in an
        // opaque origin) means this page cannot take part.
        if (error?.name !== "AbortError" && !request.release) this.#unavailable(error);
      })
      .finally(() => {
        if (this.#lead?.request === request) this.#stopLeading();
        if (this.#request === request) {
          this.#request = null;
          this.#campaign();
        }
      });
  }

  /**
   * Tells every member to use a connection of its own, now and for every
   * member to come: the lock cannot be had here, or the gateway cannot carry
   * several sessions on one connection (`cause` is then that error).
   */
  #unavailable(cause) {
    if (this.#broken) return;
    const error =
      cause instanceof ToolgateError && cause.code === "SHARING_UNAVAILABLE"
        ? cause
        : new ToolgateError("SHARING_UNAVAILABLE", `The tabs cannot share a connection here: ${cause?.message ?? cause}`, { cause });
    this.#broken = error;
    for (const member of [...this.#members.values()]) member.onRefused(error);
    this.#members.clear();
    this.#statusGiven.clear();
    this.#pathGiven.clear();
    this.#resign();
    this.#stopWatchdog();
  }

  /** Lets go of the lock, or of the place in line for it. */
  #resign() {
    const request = this.#request;
    this.#request = null;
    if (this.#lead?.request === request) this.#stopLeading();
    request?.abort?.abort();
    request?.release?.();
  }

  /** Takes the lock from a leader that went silent (frozen, or hung). */
  #steal() {
    const waiting = this.#request;
    this.#requestLock(true);
    waiting?.abort?.abort();
    waiting?.release?.();
  }

  // --- leading --------------------------------------------------------------------

  #startLeading(request) {
    const abort = new AbortController();
    const connection = new MultiSessionConnection({
      ...this.#opts,
      deliver: (sessionId, event) => {
        const member = this.#members.get(sessionId);
        if (member) member.onEvent(event);
        else this.#post({ type: "event", sessionId, event });
      },
      refuse: (session, error) => {
        const member = this.#members.get(session.sessionId);
        if (member && session.owner === this.#pageId) member.onRefused(error);
        else this.#post({ type: "refused", sessionId: session.sessionId, to: session.owner, error: { code: error.code, message: error.message, status: error.status } });
      },
      changed: () => this.#leaderChanged(),
      unavailable: (error) => {
        this.#post({ type: "unavailable", error: { code: error.code, message: error.message, status: error.status } });
        this.#unavailable(error);
      },
      problem: (error, during) => {
        for (const member of this.#members.values()) member.onProblem?.(error, during);
      },
    });
    // beats counts the heartbeats; pagesHeard is, by page id, when it was last
    // heard {at, beat} and whether it says `alive` ({keepalive}).
    const term = { n: this.#highestTerm.n + 1, page: this.#pageId };
    this.#highestTerm = term;
    const lead = { request, connection, abort, heartbeat: null, dirty: false, beats: 0, pagesHeard: new Map(), term, startedAt: Date.now() };
    this.#lead = lead;
    for (const member of this.#members.values()) connection.add({ sessionId: member.sessionId, token: member.token, cursor: member.cursor(), owner: this.#pageId });
    this.#post({ type: "roll_call", term });
    this.#sayLeader();
    lead.heartbeat = setInterval(() => {
      lead.beats++;
      this.#dropSilentPages(lead);
      this.#sayLeader();
    }, LEADER_HEARTBEAT_MS);
    setTimeout(() => {
      if (!abort.signal.aborted) connection.run(abort.signal);
    }, GATHER_MS);
  }

  #stopLeading() {
    const lead = this.#lead;
    if (!lead) return;
    this.#lead = null;
    clearInterval(lead.heartbeat);
    lead.abort.abort();
    this.#lastLeaderHeard = Date.now();
    this.#giveStatuses();
  }

  /**
   * Stops carrying the sessions of pages that went silent: no message for
   * PAGE_SILENCE_MS and PAGE_SILENCE_BEATS heartbeats (a leader whose own
   * timers are throttled does not count its own slowness against them).
   */
  #dropSilentPages(lead) {
    const now = Date.now();
    for (const s of [...lead.connection.sessions.values()]) {
      if (s.owner === this.#pageId) continue;
      const heard = lead.pagesHeard.get(s.owner);
      if (!heard?.keepalive || now - heard.at <= PAGE_SILENCE_MS || lead.beats - heard.beat < PAGE_SILENCE_BEATS) continue;
      lead.connection.remove(s.sessionId, s.owner);
    }
  }

  /** Notes that a page spoke (for #dropSilentPages). */
  #heardPage(message) {
    const lead = this.#lead;
    if (!lead || typeof message.from !== "string") return;
    const before = lead.pagesHeard.get(message.from);
    const keepalive = Boolean(before?.keepalive) || message.type === "alive" || message.keepalive === true;
    lead.pagesHeard.set(message.from, { at: Date.now(), beat: lead.beats, keepalive });
  }

  /** Tells the leader this page is alive, unless it was told less than `gapMs` ago. */
  #sayAlive(gapMs) {
    if (this.#lead || this.#members.size === 0 || this.#hidden || this.#frozen) return;
    const now = Date.now();
    if (now - this.#aliveSaidAt < gapMs) return;
    this.#aliveSaidAt = now;
    this.#post({ type: "alive", sessions: [...this.#members.keys()], term: this.#highestTerm });
  }

  /** The connection's transport or sessions changed: tell the pages (once per turn) and this page's members. */
  #leaderChanged() {
    const lead = this.#lead;
    if (!lead || lead.dirty) return;
    lead.dirty = true;
    queueMicrotask(() => {
      lead.dirty = false;
      if (this.#lead === lead) this.#sayLeader();
    });
  }

  #sayLeader() {
    const lead = this.#lead;
    if (!lead) return;
    const { connection } = lead;
    const joined = connection.joined;
    // `live` gives each session's own transport (its lane's); `transport` and
    // `joined` are what pages of earlier versions read.
    const live = Object.fromEntries(joined.map((id) => [id, connection.transportOf(id)]));
    this.#post({ type: "leader", term: lead.term, transport: connection.transport, joined, live, known: [...connection.sessions.keys()], path: connection.path });
    this.#giveStatuses();
  }

  /** Gives each member of this page its status: the transport when its session is live, else null. */
  #giveStatuses(snapshot) {
    let statusOf = () => null;
    let path = null;
    if (this.#lead) {
      const { connection } = this.#lead;
      statusOf = (sessionId) => connection.transportOf(sessionId);
      path = connection.path;
    } else if (snapshot) {
      statusOf = (sessionId) => (Object.hasOwn(snapshot.live, sessionId) ? snapshot.live[sessionId] : null);
      path = snapshot.path;
    }
    const pathSaid = JSON.stringify(path);
    for (const member of this.#members.values()) {
      if (path && this.#pathGiven.get(member) !== pathSaid) {
        this.#pathGiven.set(member, pathSaid);
        member.onPath?.(path);
      }
      const status = statusOf(member.sessionId);
      if (this.#statusGiven.get(member) === status) continue;
      this.#statusGiven.set(member, status);
      member.onStatus(status);
    }
  }

  // --- the channel ----------------------------------------------------------------

  #announce(member, cursor) {
    member.announcedAt = Date.now();
    const join = { sessionId: member.sessionId, token: member.token, cursor: Number.isFinite(cursor) ? cursor : null };
    if (this.#lead) this.#lead.connection.add({ ...join, owner: this.#pageId });
    else this.#post({ type: "join", ...join, keepalive: true, term: this.#highestTerm });
  }

  #sayLeave(member) {
    if (this.#lead) this.#lead.connection.remove(member.sessionId, this.#pageId);
    else this.#post({ type: "leave", sessionId: member.sessionId, token: member.token });
  }

  #post(message) {
    try {
      this.#channel.postMessage({ ...message, from: this.#pageId });
    } catch {
      // A closed channel (the page is going away): nothing to tell.
    }
  }

  #onMessage(message) {
    if (!message || typeof message !== "object" || typeof message.from !== "string" || message.from === this.#pageId) return;
    this.#heardPage(message);
    const lead = this.#lead;
    switch (message.type) {
      case "join":
        if (!isId(message.sessionId) || !isId(message.token) || !(message.cursor == null || Number.isFinite(message.cursor))) return;
        this.#raiseTerm(message.term);
        lead?.connection.add({ sessionId: message.sessionId, token: message.token, cursor: message.cursor, owner: message.from });
        return;
      case "leave":
        if (isId(message.sessionId)) lead?.connection.remove(message.sessionId, message.from);
        return;
      case "alive":
        // Heard (#heardPage); a session the leader lacks is joined again on its next `leader`.
        this.#raiseTerm(message.term);
        return;
      case "probe":
        if (lead) this.#sayLeader();
        return;
      case "roll_call":
        // Answered whatever its term: the joins carry this page's highest
        // term, which a new leader that has not heard it takes above.
        if (isTerm(message.term) && compareTerms(message.term, this.#highestTerm) >= 0) {
          this.#highestTerm = message.term;
          this.#highestTermHeardAt = Date.now();
          this.#heardLeader();
        }
        for (const member of this.#members.values()) this.#announce(member, member.cursor());
        return;
      case "leader": {
        if (!isTerm(message.term)) return; // an earlier version's leader, or not a leader message at all
        // A malformed message is no leader's, whatever term it claims.
        const snapshot = leaderSnapshot(message);
        if (!snapshot) return;
        if (lead) {
          // Another page holds a later term: the lock was taken from this
          // one, which steps down at once rather than when the lock says so.
          if (compareTerms(message.term, lead.term) > 0) {
            this.#highestTerm = message.term;
            this.#resign();
            this.#campaign();
          }
          return;
        }
        // A lower term is a leader that lost the lock, while the one that
        // took it talks; once that one is silent (gone), the lower is heard.
        const older = compareTerms(message.term, this.#highestTerm) < 0;
        if (older && Date.now() - this.#highestTermHeardAt < LEADER_SILENCE_MS) return;
        this.#highestTerm = message.term;
        this.#highestTermHeardAt = Date.now();
        this.#heardLeader();
        this.#giveStatuses(snapshot);
        this.#reannounceMissing(snapshot);
        this.#sayAlive(KEEPALIVE_MS / 2);
        return;
      }
      case "event": {
        const event = message.event;
        if (!isId(message.sessionId) || !event || typeof event !== "object" || Array.isArray(event) || typeof event.type !== "string") return;
        this.#members.get(message.sessionId)?.onEvent(event);
        return;
      }
      case "refused": {
        if (message.to !== this.#pageId || !isId(message.sessionId)) return;
        const error = sentError(message.error, "NOT_FOUND", "The session was refused");
        if (error.code === "SHARING_UNAVAILABLE") this.#unavailable(error);
        else this.#members.get(message.sessionId)?.onRefused(error);
        return;
      }
      case "unavailable":
        this.#unavailable(sentError(message.error, "SHARING_UNAVAILABLE", "The gateway cannot carry several sessions on one connection"));
        return;
      default:
        return; // a message of a later version
    }
  }

  /**
   * A page reports the highest term it knows: a leader in its first moments
   * (one that had heard no leader before, as a page just opened) takes a
   * term above it, so that the pages listen to it.
   */
  #raiseTerm(term) {
    const lead = this.#lead;
    if (!isTerm(term) || compareTerms(term, this.#highestTerm) <= 0) return;
    if (!lead || Date.now() - lead.startedAt > TERM_ADOPTION_MS) return;
    lead.term = { n: term.n + 1, page: this.#pageId };
    this.#highestTerm = lead.term;
    this.#sayLeader();
  }

  #heardLeader() {
    this.#lastLeaderHeard = Date.now();
    this.#probedAt = 0;
  }

  /** Joins again the members a leader does not know of (a join lost between two leaders). */
  #reannounceMissing({ known }) {
    const now = Date.now();
    for (const member of this.#members.values()) {
      if (!known.has(member.sessionId) && now - (member.announcedAt ?? 0) > REANNOUNCE_MS) this.#announce(member, member.cursor());
    }
  }

  // --- a silent leader --------------------------------------------------------------

  #startWatchdog() {
    if (this.#watchdog) return;
    const jitter = Math.random() * 500;
    this.#watchdog = setInterval(() => {
      this.#checkLeader(jitter);
      this.#sayAlive(KEEPALIVE_MS);
    }, 250);
  }

  #stopWatchdog() {
    clearInterval(this.#watchdog);
    this.#watchdog = null;
  }

  #checkLeader(jitter) {
    if (this.#lead || !this.#request || !this.#wantsToLead) return;
    const now = Date.now();
    if (now - this.#lastLeaderHeard < LEADER_SILENCE_MS + jitter) return;
    if (!this.#probedAt) {
      // A leader in a background tab may only be slow (its timers throttled):
      // it still answers a message.
      this.#probedAt = now;
      this.#post({ type: "probe" });
      return;
    }
    if (now - this.#probedAt < PROBE_WAIT_MS) return;
    this.#probedAt = 0;
    this.#lastLeaderHeard = now;
    this.#steal();
  }

  // --- the page's life ----------------------------------------------------------------

  /** The page goes (closed, reloaded, navigated away, or into the back/forward cache). */
  #onPageHide() {
    this.#hidden = true;
    for (const member of this.#members.values()) this.#sayLeave(member);
    this.#resign();
  }

  #onFreeze() {
    this.#frozen = true;
    this.#resign();
  }

  /** Back from the back/forward cache, or thawed. */
  #onPageBack() {
    const wasHidden = this.#hidden;
    this.#hidden = false;
    this.#frozen = false;
    this.#lastLeaderHeard = Date.now();
    if (wasHidden) for (const member of this.#members.values()) this.#announce(member, member.cursor());
    this.#campaign();
  }
}

/** The ToolgateError another page sent as {code, message, status}; the defaults fill what is missing or not of its type. */
function sentError(sent, code, message) {
  const e = sent && typeof sent === "object" ? sent : {};
  return new ToolgateError(typeof e.code === "string" ? e.code : code, typeof e.message === "string" ? e.message : message, {
    status: Number.isInteger(e.status) ? e.status : code === "NOT_FOUND" ? 404 : 0,
  });
}

/** Whether a value is a non-empty string (a session id, a token). */
function isId(value) {
  return typeof value === "string" && value.length > 0;
}

/** Whether a value is a leader's term: {n: a whole number, page: the leader page's id}. */
function isTerm(term) {
  return Boolean(term) && typeof term === "object" && Number.isSafeInteger(term.n) && term.n >= 0 && typeof term.page === "string";
}

/** Orders two terms: by number, then by page id (two pages that took the same number). */
function compareTerms(a, b) {
  if (a.n !== b.n) return a.n < b.n ? -1 : 1;
  return a.page < b.page ? -1 : a.page > b.page ? 1 : 0;
}

const TRANSPORTS = new Set(["sse", "poll"]);

/**
 * What a `leader` message says: `live` (session id -> "sse" or "poll") and
 * `known` (a Set of session ids); null for a message not of that form. A
 * message without `live` (an earlier version) has the leader's one
 * transport for every session in `joined`.
 */
function leaderSnapshot(message) {
  const ids = (list) => (Array.isArray(list) ? list.filter((id) => typeof id === "string") : null);
  const known = ids(message.known);
  if (!known) return null;
  const live = Object.create(null);
  if (message.live !== undefined) {
    if (!message.live || typeof message.live !== "object" || Array.isArray(message.live)) return null;
    for (const [id, transport] of Object.entries(message.live)) if (TRANSPORTS.has(transport)) live[id] = transport;
  } else {
    const joined = ids(message.joined);
    if (!joined) return null;
    if (TRANSPORTS.has(message.transport)) for (const id of joined) live[id] = message.transport;
  }
  const path = message.path && typeof message.path === "object" && !Array.isArray(message.path) ? message.path : null;
  return { live, known: new Set(known), path };
}

function randomId() {
  if (typeof globalThis.crypto?.randomUUID === "function") return globalThis.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

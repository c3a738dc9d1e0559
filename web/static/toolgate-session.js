// Which session a toolgate client owns: its default storage key (so that
// clients sharing a storage keep a session each) and the Web Lock it holds on
// the session while it runs (so that a duplicated tab, whose sessionStorage
// is a copy, does not take up the same session). Web Locks are optional:
// without them (Node, old browsers) a client holds nothing and resumes what
// it finds stored, as before.

/** Ranks held by live clients: storage → base key → ranks in use. */
const ranksInUse = new WeakMap();

/**
 * Gives a client its default storage key: `base` for the first live client
 * of `storage` with that base, `base:2`, `base:3`… for the next ones, in the
 * order they claim it. A rank is free again once release() is called (when
 * the client closes), and the next claim takes the lowest free rank. So a
 * page that builds its clients in the same order on every load gives each
 * the same key, hence its own session, again after a reload.
 * @param {object} storage
 * @param {string} base
 * @returns {{key: string, release: () => void}}
 */
export function claimStorageKey(storage, base) {
  let byBase = ranksInUse.get(storage);
  if (!byBase) ranksInUse.set(storage, (byBase = new Map()));
  let ranks = byBase.get(base);
  if (!ranks) byBase.set(base, (ranks = new Set()));
  let rank = 1;
  while (ranks.has(rank)) rank++;
  ranks.add(rank);
  return {
    key: rank === 1 ? base : `${base}:${rank}`,
    release: () => ranks.delete(rank),
  };
}

/** The Web Lock a client holds while it uses a session. */
export function sessionLockName(sessionId) {
  return `toolgate-session:${sessionId}`;
}

/**
 * Takes the Web Lock named after the session unless someone else holds it:
 * another live tab that resumed the same stored session (a duplicated tab
 * copies sessionStorage), or another client in this page. A lock that is
 * taken is waited for up to `waitMs`, since one being let go (by the page
 * a reload replaces, or a client that just closed) is free a moment later.
 * Resolves with a function that releases the lock, or with null when it is
 * held elsewhere. Where the platform has no Web Locks (Node, old browsers, an
 * opaque origin) there is nothing to hold: it resolves with a function that
 * does nothing.
 * @param {string} sessionId
 * @param {number} [waitMs]
 * @returns {Promise<(() => void) | null>}
 */
export async function lockSession(sessionId, waitMs = 0) {
  const locks = globalThis.navigator?.locks;
  if (typeof locks?.request !== "function") return () => {};
  const options = waitMs > 0 ? { signal: AbortSignal.timeout(waitMs) } : { ifAvailable: true };
  return requestLock(locks, sessionLockName(sessionId), options);
}

/** One lock request whose grant is held until the returned function is called; null when not granted. */
function requestLock(locks, name, options) {
  return new Promise((resolve) => {
    let release;
    const held = new Promise((r) => (release = r));
    try {
      locks
        .request(name, options, (lock) => {
          resolve(lock ? release : null);
          return lock ? held : undefined;
        })
        .catch(() => {
          // Not granted in time, or no locks here (a SecurityError in an opaque origin).
          resolve(options.signal?.aborted ? null : () => {});
        });
    } catch {
      resolve(() => {});
    }
  });
}

/**
 * The Web Lock of the session one client uses: at most one held at a time,
 * requests for the same session shared, and a grant that arrives after
 * release() let go of at once.
 */
export class SessionLock {
  #waitMs;
  #current = null;

  /** @param {number} waitMs how long hold() waits for a lock someone else holds */
  constructor(waitMs) {
    this.#waitMs = waitMs;
  }

  /**
   * Takes (or keeps) the lock of `sessionId`, letting go of any other.
   * Resolves true once held; false when another live client holds it, or
   * release() was called meanwhile.
   * @param {string} sessionId
   * @returns {Promise<boolean>}
   */
  hold(sessionId) {
    if (this.#current?.sessionId === sessionId) return this.#current.held;
    this.release();
    const lock = { sessionId, release: null, letGo: false, held: null };
    lock.held = lockSession(sessionId, this.#waitMs).then((release) => {
      if (release && !lock.letGo) {
        lock.release = release;
        return true;
      }
      release?.();
      if (this.#current === lock) this.#current = null;
      return false;
    });
    this.#current = lock;
    return lock.held;
  }

  /** Lets go of the lock held or asked for, if any. */
  release() {
    const lock = this.#current;
    this.#current = null;
    if (!lock) return;
    lock.letGo = true;
    lock.release?.();
  }
}

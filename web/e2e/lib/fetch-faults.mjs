// A fetch wrapper for tests that need the network to misbehave in a precise
// way the real gateway cannot be asked for: a result post lost on the way, a
// stream that breaks, a stream a proxy holds back, a cursor forgotten. Every
// request it lets through goes to the real gateway.

/**
 * @returns {{fetch: typeof fetch, faults: object, breakStreams: () => void, requests: object[]}}
 */
export function faultyFetch() {
  const faults = {
    /** How many POST .../results to fail with a network error before letting them through. */
    failResults: 0,
    /** How many event-stream requests to hold (never answer) until aborted. */
    holdStreams: 0,
    /** Drop the Last-Event-ID header, so a reconnect gets the open calls again. */
    dropLastEventId: false,
    /** An async function run before a POST .../results goes through (once; then cleared). */
    beforeResult: null,
    /** Let streams deliver their "ready" event, then forward nothing more (a proxy that stalls). */
    freezeStreamsAfterReady: false,
  };
  const openStreams = new Set();
  const requests = [];

  async function wrapped(url, init = {}) {
    const headers = { ...(init.headers ?? {}) };
    const isStream = headers.Accept === "text/event-stream";
    requests.push({ url: String(url), method: init.method ?? "GET", stream: isStream, lastEventId: headers["Last-Event-ID"] });
    if ((init.method ?? "GET") === "POST" && /\/results$/.test(url) && faults.failResults > 0) {
      faults.failResults--;
      throw new TypeError("fetch failed (simulated network loss)");
    }
    if ((init.method ?? "GET") === "POST" && /\/results$/.test(url) && faults.beforeResult) {
      const hook = faults.beforeResult;
      faults.beforeResult = null;
      await hook();
    }
    if (isStream && faults.holdStreams > 0) {
      faults.holdStreams--;
      return new Promise((_resolve, reject) => {
        init.signal?.addEventListener("abort", () => reject(init.signal.reason ?? new DOMException("aborted", "AbortError")), { once: true });
      });
    }
    if (isStream && faults.dropLastEventId) delete headers["Last-Event-ID"];
    if (!isStream) return fetch(url, { ...init, headers });
    // Streams get their own abort, so a test can break them like a network would.
    const own = new AbortController();
    init.signal?.addEventListener("abort", () => own.abort(init.signal.reason), { once: true });
    openStreams.add(own);
    try {
      const res = await fetch(url, { ...init, headers, signal: own.signal });
      return faults.freezeStreamsAfterReady && res.ok ? freezeAfterReady(res) : res;
    } catch (err) {
      openStreams.delete(own);
      throw err;
    }
  }

  return {
    fetch: wrapped,
    faults,
    requests,
    breakStreams() {
      for (const c of openStreams) c.abort(new TypeError("network changed (simulated)"));
      openStreams.clear();
    },
  };
}

/** A copy of an SSE response that stops forwarding bytes once "ready" has passed. */
function freezeAfterReady(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  let frozen = false;
  const body = new ReadableStream({
    async pull(controller) {
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (err) {
          controller.error(err);
          return;
        }
        if (chunk.done) {
          controller.close();
          return;
        }
        if (frozen) continue; // swallowed, as a stalled proxy would
        controller.enqueue(chunk.value);
        seen += decoder.decode(chunk.value, { stream: true });
        if (seen.includes("event: ready")) frozen = true;
        return;
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

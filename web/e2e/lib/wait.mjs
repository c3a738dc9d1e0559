// Waiting helpers for tests: for a client event, or for a condition.

/**
 * Resolves with the detail of the next `type` event of `client` for which
 * `match(detail)` holds; rejects after `timeoutMs`.
 */
export function nextEvent(client, type, match = () => true, timeoutMs = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no "${type}" event matched within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = client.on(type, (detail) => {
      if (!match(detail)) return;
      clearTimeout(timer);
      off();
      resolve(detail);
    });
  });
}

/** Polls `check` until it returns a truthy value, which it resolves with; rejects after `timeoutMs`. */
export async function until(check, timeoutMs = 15000, what = "the condition") {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Records every event of the given types a client emits, as [type, detail]. */
export function recordEvents(client, types) {
  const seen = [];
  for (const type of types) client.on(type, (detail) => seen.push([type, detail]));
  return seen;
}

// Each client owns its session: clients sharing a storage get default keys of
// their own (the client's name, then its rank among the live clients), so
// they get a session each and take up the same one again after a "reload"
// (closing every client and making them again in the same order). Node has
// no Web Locks; the lock side is tested in Chromium (browser/tabs.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStorage } from "../../static/toolgate.js";
import { sdkFixture } from "../lib/sdk.mjs";

let gw;
const newClient = sdkFixture({ transport: "sse", reconnectBaseMs: 100, reconnectMaxMs: 1000 }, (g) => {
  gw = g;
});

/** A client of `storage` with a tool named after its part, answering {part}. */
function partClient(storage, part, opts = {}) {
  const client = newClient({ storage, ...opts });
  client.registerTool({ name: `${part}_tool`, description: `Answers for ${part}`, handler: () => ({ part }) });
  return client;
}

function storedSessionId(storage, key) {
  const raw = storage.getItem(key);
  return raw === null ? null : JSON.parse(raw).sessionId;
}

test("two clients sharing a storage get a session each, and after a reload each resumes its own", async () => {
  const storage = new MemoryStorage();
  const alpha = partClient(storage, "alpha");
  const beta = partClient(storage, "beta");
  await Promise.all([alpha.connect(), beta.connect()]);
  assert.notEqual(alpha.sessionId, beta.sessionId);
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}`), alpha.sessionId, "the first client keeps the key earlier versions used");
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}:2`), beta.sessionId, "the second client's key is ranked");
  for (const [client, part] of [
    [alpha, "alpha"],
    [beta, "beta"],
  ]) {
    const record = await gw.call(client.sessionId, `${part}_tool`, {}, { timeout_ms: 10000 });
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.deepEqual(record.output, { part });
  }

  // The "reload": both go, a call waits for beta, both come back in the same order.
  const ids = { alpha: alpha.sessionId, beta: beta.sessionId };
  await Promise.all([alpha.close(), beta.close()]);
  const pending = await gw.call(ids.beta, "beta_tool", {}, { wait: false, timeout_ms: 20000 });
  const alphaAgain = partClient(storage, "alpha");
  const betaAgain = partClient(storage, "beta");
  assert.deepEqual({ alpha: alphaAgain.sessionId, beta: betaAgain.sessionId }, ids, "each resumes its own session");
  await Promise.all([alphaAgain.connect(), betaAgain.connect()]);
  assert.deepEqual({ alpha: alphaAgain.sessionId, beta: betaAgain.sessionId }, ids);
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.deepEqual(done.output, { part: "beta" });
});

test("a named client's key carries its name; an explicit storageKey is used as given", async () => {
  const storage = new MemoryStorage();
  const unnamed = partClient(storage, "plain");
  const editor = partClient(storage, "editor", { client: { name: "editor" } });
  const chat = partClient(storage, "chat", { client: { name: "chat" } });
  const pinned = partClient(storage, "pinned", { storageKey: "my-app:session" });
  await Promise.all([unnamed, editor, chat, pinned].map((c) => c.connect()));
  assert.equal(new Set([unnamed, editor, chat, pinned].map((c) => c.sessionId)).size, 4, "four sessions");
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}`), unnamed.sessionId);
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}:editor`), editor.sessionId, "ranked apart from the unnamed one");
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}:chat`), chat.sessionId);
  assert.equal(storedSessionId(storage, "my-app:session"), pinned.sessionId);
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}:2`), null, "no client took a second rank");
});

test("a client connected again after its key went to another client starts a session of its own", async () => {
  const storage = new MemoryStorage();
  const first = partClient(storage, "first");
  await first.connect();
  const firstId = first.sessionId;
  await first.close();

  const second = partClient(storage, "second"); // takes the free key, and the session left there
  await second.connect();
  assert.equal(second.sessionId, firstId);
  await first.connect(); // a key of the next rank, with nothing stored under it
  assert.notEqual(first.sessionId, firstId, "the two clients do not share the session");
  assert.equal(storedSessionId(storage, `toolgate:${gw.url}:2`), first.sessionId);
  const record = await gw.call(first.sessionId, "first_tool", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed", JSON.stringify(record));
  assert.deepEqual(record.output, { part: "first" });
});

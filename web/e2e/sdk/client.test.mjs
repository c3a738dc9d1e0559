// The SDK against a real gateway process: registering tools, answering calls
// over each transport, errors, progress and cancellation.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ToolgateClient, ToolError } from "../../static/toolgate.js";
import { startGateway } from "../lib/gateway.mjs";
import { sdkFixture } from "../lib/sdk.mjs";
import { recordEvents, until } from "../lib/wait.mjs";

let gw;
const newClient = sdkFixture({ client: { name: "sdk-test" } }, (g) => {
  gw = g;
});

const echo = {
  name: "echo",
  description: "Returns its arguments",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler: (args) => ({ echoed: args.text }),
};

for (const transport of ["sse", "poll"]) {
  test(`registers tools and answers a call over ${transport}`, async () => {
    const client = newClient({ transport });
    const seen = recordEvents(client, ["state", "transport", "call"]);
    const outcome = client.registerTool(echo);
    await client.connect();
    assert.deepEqual(await outcome, { registered: true });
    assert.equal(client.state, "connected");
    assert.equal(client.transport, transport);

    const tools = await gw.toolsOf(client.sessionId);
    const listed = tools.find((t) => t.name === "echo");
    assert.ok(listed, `echo is listed: ${JSON.stringify(tools)}`);
    assert.deepEqual(listed.source, { kind: "remote", session_id: client.sessionId });
    assert.equal(listed.online, true);

    const record = await gw.call(client.sessionId, "echo", { text: "hi" }, { wait: true, timeout_ms: 10000 });
    assert.equal(record.status, "completed", JSON.stringify(record));
    assert.deepEqual(record.output, { echoed: "hi" });
    await until(() => seen.some(([type, d]) => type === "call" && d.phase === "acknowledged"), 5000, "the ack");
    const phases = seen.filter(([type]) => type === "call").map(([, d]) => d.phase);
    assert.deepEqual(phases, ["received", "answered", "acknowledged"]);
    assert.deepEqual(
      seen.filter(([type]) => type === "state").map(([, d]) => d.state),
      ["connecting", "connected"],
    );
  });
}

test("a thrown error becomes tool_error, keeping its code and details", async () => {
  const client = newClient({ transport: "sse" });
  client.registerTool({
    name: "refuse",
    description: "Always refuses",
    handler() {
      throw new ToolError("PERMISSION_DENIED", "Camera permission denied", { resolution_hint: "allow the camera" });
    },
  });
  client.registerTool({
    name: "crash",
    description: "Fails like a bug",
    handler() {
      throw new TypeError("x is undefined");
    },
  });
  client.registerTool({
    name: "library_error",
    description: "Fails with a code the gateway does not accept",
    handler() {
      throw Object.assign(new Error("The token has expired"), { code: "auth/expired", details: { retry: true } });
    },
  });
  client.registerTool({ name: "text", description: "Returns a string", handler: async () => "plain" });
  await client.connect();

  const refused = await gw.call(client.sessionId, "refuse", {}, { timeout_ms: 10000 });
  assert.equal(refused.status, "failed");
  assert.equal(refused.error.code, "PERMISSION_DENIED");
  assert.equal(refused.error.message, "Camera permission denied");
  assert.deepEqual(refused.error.details, { resolution_hint: "allow the camera" });

  const crashed = await gw.call(client.sessionId, "crash", {}, { timeout_ms: 10000 });
  assert.equal(crashed.status, "failed");
  assert.equal(crashed.error.code, "INTERNAL_ERROR");
  assert.equal(crashed.error.message, "x is undefined");

  // A code the gateway would refuse still ends the call at once, not at its deadline.
  const library = await gw.call(client.sessionId, "library_error", {}, { timeout_ms: 10000 });
  assert.equal(library.status, "failed");
  assert.equal(library.error.code, "INTERNAL_ERROR");
  assert.equal(library.error.message, "The token has expired");
  assert.deepEqual(library.error.details, { retry: true, original_code: "auth/expired" });

  const text = await gw.call(client.sessionId, "text", {}, { timeout_ms: 10000 });
  assert.equal(text.status, "completed");
  assert.equal(text.output, "plain", "a string output stays a string");
});

test("progress() is acknowledged with a new deadline and shown on the call", async () => {
  const client = newClient({ transport: "sse" });
  let ack;
  let release;
  const released = new Promise((r) => (release = r));
  client.registerTool({
    name: "slow",
    description: "Reports progress",
    timeoutMs: 5000,
    async handler(_args, ctx) {
      ack = await ctx.progress({ current: 1, total: 2, message: "half way" });
      await released;
      return "done";
    },
  });
  await client.connect();
  const pending = await gw.call(client.sessionId, "slow", {}, { wait: false });
  assert.equal(pending.status, "pending");
  await until(() => ack, 5000, "the progress ack");
  assert.equal(ack.type, "progress_acknowledged");
  assert.equal(ack.id, pending.id);
  assert.ok(Date.parse(ack.deadline) > Date.now(), `deadline ${ack.deadline} is in the future`);
  const during = await gw.api(`/v1/calls/${pending.id}`);
  assert.deepEqual(during.body.progress, { current: 1, total: 2, message: "half way" });
  release();
  const done = await gw.waitForCall(pending.id);
  assert.equal(done.status, "completed");
});

test("call_cancelled aborts the handler's signal and no answer is posted", async () => {
  const client = newClient({ transport: "sse" });
  let reason;
  client.registerTool({
    name: "wait_forever",
    description: "Waits until cancelled",
    handler: (_args, { signal }) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => {
          reason = signal.reason;
          reject(signal.reason);
        }),
      ),
  });
  await client.connect();
  const seen = recordEvents(client, ["call"]);
  const pending = await gw.call(client.sessionId, "wait_forever", {}, { wait: false });
  await until(() => seen.some(([, d]) => d.phase === "received" && d.call.id === pending.id), 10000, "the delivery");
  const cancel = await gw.api(`/v1/calls/${pending.id}/cancel`, { method: "POST", body: {} });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  const cancelled = await until(() => seen.map(([, d]) => d).find((d) => d.phase === "cancelled"), 10000, "the cancellation");
  assert.equal(cancelled.reason, "cancelled");
  assert.equal(reason.code, "CANCELLED");
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(seen.map(([, d]) => d.phase), ["received", "cancelled"], "nothing answered after the cancel");
  assert.equal((await gw.waitForCall(pending.id)).status, "cancelled");
});

test("a tool the gateway rejects resolves registerTool with the reason", async () => {
  const client = newClient({ transport: "poll" });
  const good = client.registerTool(echo);
  const bad = client.registerTool({ name: "bad_schema", description: "Top-level type is not object", parameters: { type: "string" }, handler() {} });
  const errors = recordEvents(client, ["error"]);
  await client.connect();
  assert.deepEqual(await good, { registered: true });
  const outcome = await bad;
  assert.equal(outcome.registered, false);
  assert.equal(typeof outcome.code, "string");
  assert.ok(outcome.message);
  assert.ok(errors.some(([, d]) => d.during === "register" && /bad_schema/.test(d.error.message)));
});

test("bad options and tool definitions are refused at once with clear errors", () => {
  assert.throws(() => new ToolgateClient({ baseUrl: "ftp://x" }), /baseUrl must be an http\(s\) URL/);
  assert.throws(() => new ToolgateClient({ baseUrl: "http://x", transport: "ws" }), /transport must be one of auto, sse, poll/);
  assert.throws(() => new ToolgateClient({ baseUrl: "http://x", storage: {} }), /storage must implement/);
  const client = new ToolgateClient({ baseUrl: "http://127.0.0.1:9", storage: null });
  assert.throws(() => client.registerTool({ name: "has space", description: "d", handler() {} }), /tool name must match/);
  assert.throws(() => client.registerTool({ name: "ok", description: " ", handler() {} }), /needs a description/);
  assert.throws(() => client.registerTool({ name: "ok", description: "d" }), /needs a handler function/);
  assert.throws(() => client.registerTool({ name: "ok", description: "d", handler() {}, requiresApproval: "maybe" }), /requiresApproval/);
  assert.throws(() => client.registerTool({ name: "ok", description: "d", handler() {}, timeoutMs: -1 }), /timeoutMs/);
});

test("a client key the gateway refuses makes connect() reject", async () => {
  const keyed = await startGateway({ args: ["--client-key", "right-key"] });
  try {
    const wrong = new ToolgateClient({ baseUrl: keyed.url, storage: null, clientKey: "wrong-key" });
    await assert.rejects(wrong.connect(), (err) => err.code === "UNAUTHENTICATED" && err.status === 401);
    assert.equal(wrong.state, "closed");
    const right = new ToolgateClient({ baseUrl: keyed.url, storage: null, clientKey: "right-key", transport: "poll" });
    await right.connect();
    assert.equal(right.state, "connected");
    await right.close();
  } finally {
    await keyed.stop();
  }
});

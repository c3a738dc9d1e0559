// Unit tests of the SDK's text/event-stream parser, event decoding and reply reading.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser, decodeStreamEvent, decodePollEvent } from "../../static/toolgate-transport.js";

test("parses the gateway's opening, an event with an id and a ping", () => {
  const p = new SSEParser();
  const events = p.push(
    'retry: 2000\n\nevent: ready\ndata: {"type":"ready","heartbeat_ms":15000}\n\n' +
      'id: 42\nevent: tool_call_request\ndata: {"type":"tool_call_request","id":"c1","name":"t","args":{}}\n\n' +
      'event: ping\ndata: {"type":"ping"}\n\n',
  );
  assert.equal(p.retryMs, 2000);
  assert.deepEqual(
    events.map((e) => [e.event, e.id]),
    [["ready", null], ["tool_call_request", "42"], ["ping", null]],
  );
  assert.equal(decodeStreamEvent(events[1]).seq, 42);
  assert.equal(decodeStreamEvent(events[1]).id, "c1", "the payload's id (the call id) is kept; the cursor is seq");
  assert.equal(decodeStreamEvent(events[0]).seq, undefined);
});

test("handles CRLF and CR line ends split across chunks, comments and multi-line data", () => {
  const p = new SSEParser();
  const text = ': comment\r\nevent: x\r\ndata: line1\r\ndata: line2\r\n\r\nevent: y\rdata: z\r\r';
  const out = [];
  for (const ch of text) out.push(...p.push(ch)); // one character at a time
  assert.deepEqual(out.map((e) => [e.event, e.data]), [["x", "line1\nline2"], ["y", "z"]]);
});

test("skips a leading BOM and blocks without data; a field without colon is an empty value", () => {
  const p = new SSEParser();
  const out = p.push('\ufeffevent: a\n\ndata\n\nid: 7\ndata: {"type":"t"}\n\n');
  assert.deepEqual(out.map((e) => [e.event, e.data, e.id]), [["message", "", null], ["message", '{"type":"t"}', "7"]]);
});

test("decodeStreamEvent ignores data that is not a JSON object", () => {
  assert.equal(decodeStreamEvent({ event: "x", data: "not json", id: null }), null);
  assert.equal(decodeStreamEvent({ event: "x", data: "[1]", id: null }), null);
  assert.equal(decodeStreamEvent({ event: "ping", data: "{}", id: null }).type, "ping");
});

test("decodePollEvent accepts flattened and nested payloads", () => {
  assert.deepEqual(decodePollEvent({ seq: 3, type: "tool_call_request", id: "c", name: "n", args: {} }), {
    seq: 3,
    type: "tool_call_request",
    id: "c",
    name: "n",
    args: {},
  });
  const nested = decodePollEvent({ seq: 4, type: "call_cancelled", call_id: "c", data: { type: "call_cancelled", id: "c", reason: "timeout" } });
  assert.equal(nested.seq, 4);
  assert.equal(nested.id, "c");
  assert.equal(nested.reason, "timeout");
  assert.equal(decodePollEvent(null), null);
});

test("requestJSON reports a reply cut off mid-body as NETWORK", async () => {
  const { requestJSON, ToolgateError } = await import("../../static/toolgate-http.js");
  const cutOff = async () => ({ ok: true, status: 200, text: () => Promise.reject(new TypeError("terminated")) });
  await assert.rejects(requestJSON(cutOff, "http://gateway.test/x"), (err) => {
    assert.ok(err instanceof ToolgateError, `a ToolgateError, not ${err?.name}: ${err?.message}`);
    assert.equal(err.code, "NETWORK");
    assert.match(err.message, /cut off: terminated/);
    return true;
  });
});

// A tool's title, output schema and annotations, given to registerTool, reach
// the gateway (GET /api/tools lists them under their wire names) and an MCP
// host (/mcp/sessions/{sid} lists them as title, outputSchema, annotations,
// and a call's output as structuredContent); definitions with the wrong
// types are refused before any request.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { ToolgateClient } from "../../static/toolgate.js";
import { sdkFixture } from "../lib/sdk.mjs";
import { connectMcp } from "../mcp/mcp-client.mjs";

let gw;
const newClient = sdkFixture({ client: { name: "sdk-presentation-test" } }, (g) => {
  gw = g;
});
const hosts = [];
after(async () => {
  await Promise.all(hosts.map((h) => h.close().catch(() => {})));
});

const outputSchema = { type: "object", properties: { celsius: { type: "number" } }, required: ["celsius"] };

const weather = {
  name: "weather",
  description: "The temperature here",
  title: "Weather here",
  outputSchema,
  annotations: { title: "Weather", destructiveHint: false, idempotentHint: true, openWorldHint: true },
  readOnly: true,
  handler: () => ({ celsius: 21.5 }),
};

test("title, output schema and annotations reach the gateway and an MCP host", async () => {
  const client = newClient({ transport: "sse" });
  const outcome = client.registerTool(weather);
  await client.connect();
  assert.deepEqual(await outcome, { registered: true });

  const listed = (await gw.toolsOf(client.sessionId)).find((t) => t.name === "weather");
  assert.equal(listed.title, "Weather here");
  assert.deepEqual(listed.output_schema, outputSchema);
  assert.deepEqual(listed.annotations, { title: "Weather", destructive_hint: false, idempotent_hint: true, open_world_hint: true });

  const host = await connectMcp(`${gw.url}/mcp/sessions/${client.sessionId}`, gw.agentKey);
  hosts.push(host);
  const tool = (await host.listTools()).tools.find((t) => t.name === "weather");
  assert.equal(tool.title, "Weather here");
  assert.deepEqual(tool.outputSchema, outputSchema);
  assert.deepEqual(tool.annotations, { title: "Weather", destructiveHint: false, idempotentHint: true, openWorldHint: true, readOnlyHint: true });
  const answer = await host.callTool({ name: "weather", arguments: {} });
  assert.notEqual(answer.isError, true, JSON.stringify(answer));
  assert.deepEqual(answer.structuredContent, { celsius: 21.5 });
});

test("a definition whose title, output schema or annotations have the wrong type is refused", () => {
  const client = new ToolgateClient({ baseUrl: "http://127.0.0.1:1" });
  const bad = [
    [{ title: 5 }, /title must be a string/],
    [{ title: "t".repeat(257) }, /title must be a string of at most 256 characters/],
    [{ outputSchema: { type: "string" } }, /outputSchema must be a JSON Schema object with "type": "object"/],
    [{ outputSchema: [] }, /outputSchema must be/],
    [{ annotations: { destructiveHint: "no" } }, /annotations.destructiveHint must be a boolean/],
    [{ annotations: { readOnlyHint: true } }, /annotations.readOnlyHint is not one of/],
    [{ annotations: "hints" }, /annotations must be an object/],
  ];
  for (const [fields, message] of bad) {
    assert.throws(() => client.registerTool({ ...weather, ...fields }), (err) => err instanceof TypeError && message.test(err.message), JSON.stringify(fields));
  }
});

// What an imported MCP server's tools show and answer reaches hosts whole
// through the gateway's /mcp: the official reference server
// (@modelcontextprotocol/server-everything, over stdio, imported with
// --mcp-server) is listed directly by the TypeScript SDK's client and
// through /mcp, and get-structured-content's outputSchema, title and
// annotations are the same both ways; its image tool answers with an image
// block (not a text block of base64 JSON) and get-structured-content with
// structuredContent matching its schema.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { startGateway } from "../lib/gateway.mjs";
import { until } from "../lib/wait.mjs";
import { connectMcp } from "./mcp-client.mjs";

const everythingBin = resolve(dirname(fileURLToPath(import.meta.url)), "../node_modules/.bin/mcp-server-everything");

let gw;
let direct;
let host;

before(async () => {
  gw = await startGateway({ args: ["--mcp-server", `everything=${everythingBin} stdio`] });
  direct = new Client({ name: "toolgate-e2e-direct", version: "1.0.0" });
  await direct.connect(new StdioClientTransport({ command: everythingBin, args: ["stdio"], stderr: "ignore" }));
  host = await connectMcp(`${gw.url}/mcp`, gw.agentKey);
});

after(async () => {
  await host?.close().catch(() => {});
  await direct?.close().catch(() => {});
  await gw?.stop();
});

/** The tool /mcp lists for server-everything's `remote` tool, once it is listed. */
async function viaGateway(remote) {
  let found;
  await until(async () => {
    const { tools } = await host.listTools();
    found = tools.find((t) => t._meta?.["io.toolgate/tool"] === `everything__${remote}`);
    return found !== undefined;
  }, 20000, `everything__${remote} listed on /mcp`);
  return found;
}

/** server-everything's own listing of `remote`. */
async function directly(remote) {
  const { tools } = await direct.listTools();
  const t = tools.find((x) => x.name === remote);
  assert.ok(t, `server-everything lists ${remote}: ${tools.map((x) => x.name).join(", ")}`);
  return t;
}

test("get-structured-content shows the same outputSchema, title and annotations through /mcp as directly", async () => {
  const own = await directly("get-structured-content");
  assert.ok(own.outputSchema, "server-everything gives get-structured-content an outputSchema");
  const listed = await viaGateway("get-structured-content");
  assert.deepEqual(listed.outputSchema, own.outputSchema);
  assert.equal(listed.title, own.title);
  for (const [hint, value] of Object.entries(own.annotations ?? {})) {
    assert.deepEqual(listed.annotations?.[hint], value, `annotations.${hint}`);
  }

  const args = { location: "New York" };
  const answer = await host.callTool({ name: listed.name, arguments: args });
  assert.notEqual(answer.isError, true, JSON.stringify(answer));
  const ownAnswer = await direct.callTool({ name: "get-structured-content", arguments: args });
  assert.deepEqual(answer.structuredContent, ownAnswer.structuredContent);
});

test("server-everything's image tool answers with an image block through /mcp", async () => {
  const { tools } = await direct.listTools();
  const imageTool = tools.find((t) => /image/i.test(t.name));
  assert.ok(imageTool, `server-everything has an image tool: ${tools.map((x) => x.name).join(", ")}`);
  const ownAnswer = await direct.callTool({ name: imageTool.name, arguments: {} });
  const ownImage = ownAnswer.content.find((c) => c.type === "image");
  assert.ok(ownImage, "directly, it answers with an image");

  const listed = await viaGateway(imageTool.name);
  const answer = await host.callTool({ name: listed.name, arguments: {} });
  assert.notEqual(answer.isError, true, JSON.stringify(answer).slice(0, 500));
  const image = answer.content.find((c) => c.type === "image");
  assert.ok(image, `an image block through /mcp: ${JSON.stringify(answer.content).slice(0, 300)}`);
  assert.equal(image.mimeType, ownImage.mimeType);
  assert.equal(image.data, ownImage.data);
  assert.deepEqual(answer.content.map((c) => c.type), ownAnswer.content.map((c) => c.type));
});

// An imported stdio server gets a minimal environment: the official
// reference server (@modelcontextprotocol/server-everything, from
// node_modules) imported with --mcp-server, its get-env called by a
// TypeScript SDK host through the gateway's /mcp, shows PATH and the
// variable --mcp-server-env named for it, and none of the gateway's
// TOOLGATE_* variables (its agent key among them) nor a variable left
// unnamed (docs/guides/mcp-import.md, "The environment of a command").
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startGateway } from "../lib/gateway.mjs";
import { until } from "../lib/wait.mjs";
import { connectMcp } from "./mcp-client.mjs";

const everything = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", ".bin", "mcp-server-everything");
const agentKey = "e2e-importenv-agent-key-0123456789";

let gw;
let host;

before(async () => {
  // The gateway inherits this process's environment: its own keys among it.
  process.env.TOOLGATE_AGENT_KEY = agentKey;
  process.env.TOOLGATE_LLM_API_KEY = "e2e-llm-key-in-the-gateways-environment";
  process.env.IMPORTENV_GRANTED = "granted to everything";
  process.env.IMPORTENV_NOT_GRANTED = "kept back";
  gw = await startGateway({
    agentKey,
    args: ["--mcp-server", `everything=${everything} stdio`, "--mcp-server-env", "everything=IMPORTENV_GRANTED"],
  });
  host = await connectMcp(`${gw.url}/mcp`, agentKey);
});

after(async () => {
  await host?.close().catch(() => {});
  await gw?.stop();
  for (const k of ["TOOLGATE_AGENT_KEY", "TOOLGATE_LLM_API_KEY", "IMPORTENV_GRANTED", "IMPORTENV_NOT_GRANTED"]) delete process.env[k];
});

test("server-everything's get-env through /mcp shows no TOOLGATE_* variable", async () => {
  await until(
    async () => (await host.listTools()).tools.some((t) => t.name === "everything__get-env"),
    30000,
    "everything__get-env listed on /mcp",
  );
  const result = await host.callTool({ name: "everything__get-env", arguments: {} });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const env = JSON.parse(text);
  assert.equal(env.IMPORTENV_GRANTED, "granted to everything", text);
  assert.equal(env.PATH, process.env.PATH, text);
  for (const name of Object.keys(env)) assert.ok(!name.startsWith("TOOLGATE_"), `get-env shows ${name}: ${text}`);
  assert.ok(!text.includes(agentKey), `get-env shows the agent key: ${text}`);
  assert.ok(!text.includes("e2e-llm-key"), `get-env shows the model key: ${text}`);
  assert.equal(env.IMPORTENV_NOT_GRANTED, undefined, text);
});

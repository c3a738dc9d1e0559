// An MCP host for the tests: the official TypeScript SDK's client over
// Streamable HTTP with the agent key as a bearer token, and the name under
// which /mcp lists a session's tool.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * The name /mcp gives `tool` of session `sessionId`: <tool>__<the last 12
 * hex digits of the session id> (docs/PROTOCOL.md, "MCP").
 */
export function mcpToolName(tool, sessionId) {
  return `${tool}__${sessionId.replaceAll("-", "").slice(-12)}`;
}

/**
 * Connects a TypeScript SDK client (it speaks 2025-11-25: initialize, a
 * session id, the GET stream for notifications) to `url`, authenticated
 * with `agentKey`. Resolves once initialized.
 */
export async function connectMcp(url, agentKey, { name = "toolgate-e2e-host" } = {}) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${agentKey}` } },
  });
  await client.connect(transport);
  return client;
}

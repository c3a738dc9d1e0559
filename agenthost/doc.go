// Package agenthost is the agent host beside the engine: the hook chain
// and the registry with the built-in tools, the imported MCP servers and
// the sandboxed tools (Tools, built before the engine, which runs them),
// the runs and their limits (Agent, built after it), the memory tools'
// notes and the output guard that runs' and MCP calls' outputs pass.
package agenthost

// Package agentloop is toolgate's agent: a registry that knows where each
// tool comes from (built in, a client's session, a tool set), built-in
// tools, an OpenAI-compatible model provider, and the loop that asks the
// model, runs the tools it picks and stores each step so that a run
// survives a restart. The Tool and ToolSet interfaces every tool
// implements, and the hook chain every call and registration passes, are
// the root package's (toolgate.Tool, toolgate.Hooks), so that the packages
// that provide tools (sandbox, mcpimport) need not import this one. The
// approval and rate-limit rules every call obeys are the root package's
// too (toolgate.NeedsApproval, toolgate.CheckRateLimit), applied by the
// engine.
//
// It imports only the root toolgate package of this module. What it needs
// of the gateway — sending a call to a client, listing a session's tools,
// storing runs — it declares as interfaces (Dispatcher, RemoteDirectory,
// RunStore); the server package implements them and wires everything.
package agentloop

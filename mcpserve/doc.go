// Package mcpserve serves the gateway's tools to MCP hosts (Claude Code and
// Desktop, Cursor, VS Code, agent SDKs) over the Model Context Protocol's
// Streamable HTTP transport, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp).
//
// Two routes, each an MCP server of its own:
//
//   - /mcp lists the tools called without a session (built-in under their
//     own names, imported MCP servers' as NAME__tool) and the tools of every
//     reachable client session, each named <tool>__<h> where h is the last
//     12 hex digits of the session id (names.go).
//   - /mcp/sessions/{sid} lists one session's tools under their own names,
//     for a host that works with one person's tab or phone.
//
// Both revisions of the protocol are served on each route: a request whose
// Mcp-Protocol-Version header is 2026-07-28 or later goes to a stateless SDK
// handler (no initialize, no session id; list_changed through
// subscriptions/listen), any other to a stateful one (initialize,
// Mcp-Session-Id, the GET stream, DELETE), which is how the SDK itself tells
// the two apart (it serves the new revision only on stateless handlers).
//
// A tools/call becomes a toolgate call like any other (Calls.CreateCall,
// then Calls.WaitCallProgress): the same validation, hooks, approval, rate
// limits, durability and history. Its end passes the gateway's safety
// step when Options.Guard is set (OutputGuard, safety.go) and maps
// onto MCP's result (calls.go); progress reports become
// notifications/progress when the host sent a progress token; a host that gives up on the request cancels the
// call (the client gets call_cancelled).
//
// The tool lists follow the engine (Tools.WatchTools): one goroutine of
// the Endpoint (sync.go) brings each SDK server's list up to date, and the
// SDK sends notifications/tools/list_changed to the hosts.
//
// Every request is checked first (guard.go): the agent key as a bearer
// token (401 otherwise), the Origin (403 unless same-origin or allowed).
// Streamed replies carry X-Accel-Buffering: no and a keep-alive comment
// when quiet for the heartbeat interval (keepalive.go).
package mcpserve

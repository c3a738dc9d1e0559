package toolgate

import (
	"context"
	"encoding/json"
)

// ToolSet is a group of tools called without a session whose members come
// and go while the gateway runs: the tools of an imported MCP server
// (--mcp-server NAME=…), named under a prefix, or the sandboxed tools of
// a directory (--sandbox-dir), named plainly. The agent's registry lists
// them with the built-in tools, the engine stores and runs their calls as
// it does a built-in tool's, and the agent loop offers them to the model
// while the set is online.
type ToolSet interface {
	// Prefix starts the name of every tool of the set ("NAME__"). No other
	// tool, built-in or remote, may have a name that starts with it. A set
	// without a prefix ("") claims exactly the names it lists now, except
	// one a built-in tool has or one inside another set's prefix (the
	// registry's CheckSetToolName), which the registry leaves out.
	Prefix() string
	// Source is where the set's tools come from, as GET /api/tools shows.
	Source() ToolSource
	// Tools returns the set's tools, sorted by name: the last list the set
	// had, also while it is offline.
	Tools() []Tool
	// Online reports whether the set's tools can be called now.
	Online() bool
	// Watch makes the set call fn, from any goroutine and without holding
	// its locks, after its tools or its online state changed.
	Watch(fn func())
}

// Availability is the optional trait of a tool whose home can be out of
// reach (an imported MCP server that is down): Unavailable returns the
// error a call of it is refused with at once (a *Error of code
// TOOL_OFFLINE), nil when it can be called. The engine asks before it
// stores a call, so that a call to a tool that cannot run fails fast
// rather than waiting for its deadline.
type Availability interface {
	Unavailable() error
}

// Listing is the optional trait of a tool set with a prefix whose tools
// are known only once it has listed them, some time after the gateway
// starts (an imported MCP server, once connected). AwaitListing waits
// until the set has listed its tools once, or its first attempt failed,
// or ctx ends; it returns nil once they are listed, else the error
// (TOOL_OFFLINE) a call of tool gets meanwhile.
type Listing interface {
	AwaitListing(ctx context.Context, tool string) error
}

// progressKey keys the progress reporter in a context.
type progressKey struct{}

// WithProgressReporter returns ctx carrying report, which a tool running
// inside the gateway calls (through ReportProgress) to pass on how far its
// call has come; the engine stores each report on the call and tells those
// waiting on it, as it does a client's tool_progress.
func WithProgressReporter(ctx context.Context, report func(progress json.RawMessage)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress passes progress (any JSON value, at most 16 KiB) to the
// reporter ctx carries; without one it does nothing.
func ReportProgress(ctx context.Context, progress json.RawMessage) {
	if report, ok := ctx.Value(progressKey{}).(func(json.RawMessage)); ok && report != nil {
		report(progress)
	}
}

package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate"
)

// ToolSet is a group of tools called without a session whose members come
// and go while the gateway runs: the tools of an imported MCP server
// (--mcp-server NAME=…). The registry lists them with the built-in tools,
// the engine stores and runs their calls as it does a built-in tool's, and
// the agent loop offers them to the model while the set is online.
type ToolSet interface {
	// Prefix starts the name of every tool of the set ("NAME__"). No other
	// tool, built-in or remote, may have a name that starts with it.
	Prefix() string
	// Source is where the set's tools come from, as GET /api/tools shows.
	Source() toolgate.ToolSource
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
// error a call of it is refused with at once (a *toolgate.Error of code
// TOOL_OFFLINE), nil when it can be called. The engine asks before it
// stores a call, so that a call to a tool that cannot run fails fast
// rather than waiting for its deadline.
type Availability interface {
	Unavailable() error
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

// AddToolSet adds a set of tools to the registry. Its prefix must be new
// and must not start any built-in tool's name, nor be a prefix of another
// set's (or the other way round).
func (r *Registry) AddToolSet(ts ToolSet) error {
	prefix := ts.Prefix()
	if prefix == "" {
		return fmt.Errorf("a tool set needs a name prefix")
	}
	r.mu.Lock()
	for _, name := range r.names {
		if strings.HasPrefix(name, prefix) {
			r.mu.Unlock()
			return fmt.Errorf("tool set %q: built-in tool %s has its prefix", prefix, name)
		}
	}
	for _, other := range r.sets {
		if p := other.Prefix(); strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p) {
			r.mu.Unlock()
			return fmt.Errorf("tool set %q: its prefix overlaps that of %q", prefix, p)
		}
	}
	r.sets = append(r.sets, ts)
	r.mu.Unlock()
	ts.Watch(r.setChanged)
	return nil
}

// OnChange makes the registry call fn after any of its tool sets changed
// (tools listed or gone, online or offline). fn must not block.
func (r *Registry) OnChange(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, fn)
}

// setChanged passes a tool set's change on to the registry's watchers.
func (r *Registry) setChanged() {
	r.mu.RLock()
	watchers := append([]func(){}, r.watchers...)
	r.mu.RUnlock()
	for _, fn := range watchers {
		fn()
	}
}

// SourceOf says where the tool called without a session of that name comes
// from: the tool set whose prefix starts it, else built in.
func (r *Registry) SourceOf(name string) toolgate.ToolSource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if ts := r.setOfLocked(name); ts != nil {
		return ts.Source()
	}
	return toolgate.ToolSource{Kind: toolgate.SourceBuiltin}
}

// setOfLocked returns the tool set whose prefix starts name; r.mu is held.
func (r *Registry) setOfLocked(name string) ToolSet {
	for _, ts := range r.sets {
		if strings.HasPrefix(name, ts.Prefix()) {
			return ts
		}
	}
	return nil
}

// setToolLocked returns the tool of that name of one of the tool sets;
// r.mu is held.
func (r *Registry) setToolLocked(name string) (Tool, ToolSet, bool) {
	ts := r.setOfLocked(name)
	if ts == nil {
		return nil, nil, false
	}
	for _, t := range ts.Tools() {
		if t.Name() == name {
			return t, ts, true
		}
	}
	return nil, ts, false
}

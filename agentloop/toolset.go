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
// (--mcp-server NAME=…), named under a prefix, or the sandboxed tools of
// a directory (--sandbox-dir), named plainly. The registry lists them with
// the built-in tools, the engine stores and runs their calls as it does a
// built-in tool's, and the agent loop offers them to the model while the
// set is online.
type ToolSet interface {
	// Prefix starts the name of every tool of the set ("NAME__"). No other
	// tool, built-in or remote, may have a name that starts with it. A set
	// without a prefix ("") claims exactly the names it lists now, except
	// one a built-in tool has or one inside another set's prefix (see
	// Registry.CheckSetToolName), which the registry leaves out.
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

// Listing is the optional trait of a tool set with a prefix whose tools
// are known only once it has listed them, some time after the gateway
// starts (an imported MCP server, once connected). AwaitListing waits
// until the set has listed its tools once, or its first attempt failed,
// or ctx ends; it returns nil once they are listed, else the error
// (TOOL_OFFLINE) a call of tool gets meanwhile.
type Listing interface {
	AwaitListing(ctx context.Context, tool string) error
}

// AwaitListing lets a call of name made before the tool set whose prefix
// starts it has listed its tools (right after the gateway started) wait
// for that first listing, until ctx ends, rather than be refused as an
// unknown tool: it returns the set's TOOL_OFFLINE error when the set has
// not listed them by then. It returns nil at once for any other name, and
// once the set has listed, whether or not its list has name.
func (r *Registry) AwaitListing(ctx context.Context, name string) error {
	r.mu.RLock()
	ts := r.setOfLocked(name)
	r.mu.RUnlock()
	l, ok := ts.(Listing)
	if !ok || ts.Prefix() == "" {
		return nil
	}
	return l.AwaitListing(ctx, name)
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

// AddToolSet adds a set of tools to the registry. A prefix must be new,
// must not start any built-in tool's name, nor be a prefix of another
// set's (or the other way round). A set without a prefix is checked name
// by name instead, whenever it is read (claimsLocked).
func (r *Registry) AddToolSet(ts ToolSet) error {
	prefix := ts.Prefix()
	r.mu.Lock()
	if prefix != "" {
		for _, name := range r.names {
			if strings.HasPrefix(name, prefix) {
				r.mu.Unlock()
				return fmt.Errorf("tool set %q: built-in tool %s has its prefix", prefix, name)
			}
		}
		for _, other := range r.sets {
			p := other.Prefix()
			if p != "" && (strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p)) {
				r.mu.Unlock()
				return fmt.Errorf("tool set %q: its prefix overlaps that of %q", prefix, p)
			}
		}
	}
	r.sets = append(r.sets, ts)
	r.mu.Unlock()
	ts.Watch(r.setChanged)
	return nil
}

// CheckSetToolName says whether a tool set without a prefix may list a
// tool of that name: not when a built-in tool has it (CONFLICT) or it
// starts with a set's prefix (CONFLICT). A sandbox directory asks before
// it lists a module, to log why one is left out.
func (r *Registry) CheckSetToolName(name string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.nameFreeLocked(name)
}

// nameFreeLocked is CheckSetToolName with r.mu held.
func (r *Registry) nameFreeLocked(name string) error {
	if _, ok := r.builtins[name]; ok {
		return toolgate.Errorf(toolgate.EConflict, "a built-in tool has the name %s", name)
	}
	for _, ts := range r.sets {
		if p := ts.Prefix(); p != "" && strings.HasPrefix(name, p) {
			return toolgate.Errorf(toolgate.EConflict, "names starting with %q are the tools of the imported MCP server %q", p, ts.Source().Server)
		}
	}
	return nil
}

// claimsLocked reports whether the tool t, listed by ts, is ts's in the
// registry: always for a set with a prefix; for a set without one, when
// its name is free (nameFreeLocked) and no set without a prefix added
// earlier lists it too. r.mu is held.
func (r *Registry) claimsLocked(ts ToolSet, name string) bool {
	if ts.Prefix() != "" {
		return true
	}
	if r.nameFreeLocked(name) != nil {
		return false
	}
	for _, other := range r.sets {
		if other == ts {
			return true
		}
		if other.Prefix() == "" && listsTool(other, name) {
			return false
		}
	}
	return false
}

// listsTool reports whether ts lists a tool of that name now.
func listsTool(ts ToolSet, name string) bool {
	_, ok := findTool(ts.Tools(), name)
	return ok
}

// findTool returns the tool of that name in tools.
func findTool(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// claimedTools returns the tools of ts the registry lists (claimsLocked);
// r.mu is held.
func (r *Registry) claimedTools(ts ToolSet) []Tool {
	tools := ts.Tools()
	if ts.Prefix() != "" {
		return tools
	}
	out := tools[:0:0]
	for _, t := range tools {
		if r.claimsLocked(ts, t.Name()) {
			out = append(out, t)
		}
	}
	return out
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
// from: the tool set whose prefix starts it or that lists it, else built in.
func (r *Registry) SourceOf(name string) toolgate.ToolSource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if ts := r.setOfLocked(name); ts != nil {
		return ts.Source()
	}
	return toolgate.ToolSource{Kind: toolgate.SourceBuiltin}
}

// setOfLocked returns the tool set a tool of that name belongs to: the
// set whose prefix starts it, else the set without a prefix that claims
// it now; r.mu is held.
func (r *Registry) setOfLocked(name string) ToolSet {
	for _, ts := range r.sets {
		if p := ts.Prefix(); p != "" && strings.HasPrefix(name, p) {
			return ts
		}
	}
	if _, builtin := r.builtins[name]; builtin {
		return nil
	}
	for _, ts := range r.sets {
		if ts.Prefix() == "" && listsTool(ts, name) {
			return ts // the first that lists it claims it (claimsLocked)
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
	t, ok := findTool(ts.Tools(), name)
	if !ok {
		return nil, ts, false
	}
	return t, ts, true
}

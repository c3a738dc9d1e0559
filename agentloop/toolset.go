package agentloop

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate"
)

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
	l, ok := ts.(toolgate.Listing)
	if !ok || ts.Prefix() == "" {
		return nil
	}
	return l.AwaitListing(ctx, name)
}

// AddToolSet adds a set of tools to the registry. A prefix must be new,
// must not start any built-in tool's name, nor be a prefix of another
// set's (or the other way round). A set without a prefix is checked name
// by name instead, whenever it is read (claimsLocked).
func (r *Registry) AddToolSet(ts toolgate.ToolSet) error {
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
func (r *Registry) claimsLocked(ts toolgate.ToolSet, name string) bool {
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
func listsTool(ts toolgate.ToolSet, name string) bool {
	_, ok := findTool(ts.Tools(), name)
	return ok
}

// findTool returns the tool of that name in tools.
func findTool(tools []toolgate.Tool, name string) (toolgate.Tool, bool) {
	for _, t := range tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// claimedTools returns the tools of ts the registry lists (claimsLocked);
// r.mu is held.
func (r *Registry) claimedTools(ts toolgate.ToolSet) []toolgate.Tool {
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
func (r *Registry) setOfLocked(name string) toolgate.ToolSet {
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
func (r *Registry) setToolLocked(name string) (toolgate.Tool, toolgate.ToolSet, bool) {
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

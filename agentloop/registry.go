package agentloop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate"
)

// RemoteDirectory lists the tools a client session has registered, with
// whether each can be called now. The engine implements it; a session that
// closed or expired has no tools any more, an unknown one is NOT_FOUND.
type RemoteDirectory interface {
	ListTools(ctx context.Context, sessionID string) ([]toolgate.ToolInfo, error)
}

// Registry knows every tool and where it runs: the built-in tools, held
// here; the tool sets (an imported MCP server's tools, a sandbox
// directory's: toolset.go), asked live; and the remote tools of each
// session, read live from the gateway handed to ToolsFor (so a session's tools are gone the
// moment it closes or expires, and nothing here can drift from what the
// gateway has stored). It refuses a remote tool that would shadow a
// built-in one, take a tool set's prefix or a sandboxed tool's name, and
// hands the loop the tools one session's run may use.
type Registry struct {
	hooks *toolgate.Hooks

	mu       sync.RWMutex
	builtins map[string]toolgate.Tool
	names    []string           // built-in names, sorted
	sets     []toolgate.ToolSet // in the order added; no prefix a prefix of another
	watchers []func()           // told of the sets' changes (OnChange)
}

// NewRegistry returns an empty registry whose registration check also
// runs the hooks' registration rules; hooks may be nil.
func NewRegistry(hooks *toolgate.Hooks) *Registry {
	if hooks == nil {
		hooks = &toolgate.Hooks{}
	}
	return &Registry{hooks: hooks, builtins: map[string]toolgate.Tool{}}
}

// Hooks returns the hook chain the registry checks registrations with.
func (r *Registry) Hooks() *toolgate.Hooks { return r.hooks }

// AddBuiltin registers a tool that runs inside the gateway. Its spec must
// pass the check every registered tool passes (toolgate.CheckToolSpec), its
// parameters must be given, and its name must be new.
func (r *Registry) AddBuiltin(t toolgate.Tool) error {
	name := t.Name()
	if err := toolgate.CheckToolSpec(toolgate.SpecOf(t), toolgate.ToolSpecChecks{}); err != nil {
		return fmt.Errorf("built-in tool %q: %s", name, toolgate.ErrorMessage(err))
	}
	if len(t.Parameters()) == 0 {
		return fmt.Errorf("built-in tool %s needs a parameters schema", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.builtins[name]; dup {
		return fmt.Errorf("built-in tool %s is registered twice", name)
	}
	r.builtins[name] = t
	r.names = append(r.names, name)
	slices.Sort(r.names)
	return nil
}

// Has reports whether name is a tool called without a session: a
// built-in tool, or a tool a tool set lists now.
func (r *Registry) Has(name string) bool {
	_, ok := r.Builtin(name)
	return ok
}

// Builtin returns the tool called without a session of that name: a
// built-in tool, or a tool of a tool set (which may be offline: see
// Availability).
func (r *Registry) Builtin(name string) (toolgate.Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.builtins[name]; ok {
		return t, true
	}
	t, _, ok := r.setToolLocked(name)
	return t, ok
}

// List describes the tools called without a session, as GET /api/tools
// shows them, sorted by name: the built-in tools and every tool set's
// (offline ones included, with Online false).
func (r *Registry) List() []toolgate.ToolInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]toolgate.ToolInfo, 0, len(r.names))
	for _, name := range r.names {
		out = append(out, toolgate.ToolInfo{
			ToolSpec: toolgate.SpecOf(r.builtins[name]),
			Source:   toolgate.ToolSource{Kind: toolgate.SourceBuiltin},
			Online:   true,
			Presence: toolgate.PresenceConnected,
		})
	}
	for _, ts := range r.sets {
		source, online := ts.Source(), ts.Online()
		presence := toolgate.PresenceOffline // an MCP server that is down
		if online {
			presence = toolgate.PresenceConnected
		}
		for _, t := range r.claimedTools(ts) {
			out = append(out, toolgate.ToolInfo{ToolSpec: toolgate.SpecOf(t), Source: source, Online: online, Presence: presence})
		}
	}
	slices.SortFunc(out, func(a, b toolgate.ToolInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CheckRemote decides whether a client may register spec: it must not
// shadow a built-in tool, take a tool set's prefix nor the name of a
// sandboxed tool listed now (CONFLICT), and it must pass every
// registration rule (the tool-name policy among them).
func (r *Registry) CheckRemote(sessionID string, spec toolgate.ToolSpec) error {
	r.mu.RLock()
	_, builtin := r.builtins[spec.Name]
	set := r.setOfLocked(spec.Name)
	r.mu.RUnlock()
	if builtin {
		return toolgate.Errorf(toolgate.EConflict, "name is taken by a built-in tool")
	}
	switch {
	case set == nil:
	case set.Prefix() != "":
		return toolgate.Errorf(toolgate.EConflict, "names starting with %q are the tools of the imported MCP server %q", set.Prefix(), set.Source().Server)
	case set.Source().Kind == toolgate.SourceSandbox:
		return toolgate.Errorf(toolgate.EConflict, "name is taken by a sandboxed tool")
	default:
		return toolgate.Errorf(toolgate.EConflict, "name is taken by a tool of the gateway (%s)", set.Source().Kind)
	}
	return r.hooks.CheckRegistration(sessionID, spec)
}

// ToolsFor returns the tools a run for the session may use: the built-in
// tools, the tools of the tool sets that are online, and the session's
// tools that are online (as dir lists them), sorted by name (built-ins and
// sets first). Every one executes through d, so each call is stored. An
// empty sessionID gives the tools called without a session only. The
// registry is built before the engine, which is both dir and d: it is
// handed them per use (the Runner's Directory and Dispatcher).
func (r *Registry) ToolsFor(ctx context.Context, dir RemoteDirectory, d Dispatcher, sessionID string) ([]toolgate.Tool, error) {
	r.mu.RLock()
	tools := make([]toolgate.Tool, 0, len(r.names))
	for _, name := range r.names {
		tools = append(tools, builtinThroughGateway(r.builtins[name], d))
	}
	for _, ts := range r.sets {
		if !ts.Online() {
			continue
		}
		for _, t := range r.claimedTools(ts) {
			tools = append(tools, setToolThroughGateway(t, ts.Source(), d))
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(tools, func(a, b toolgate.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	if d == nil {
		return nil, fmt.Errorf("agentloop: no gateway to dispatch the tools' calls through")
	}
	if sessionID == "" {
		return tools, nil
	}
	if dir == nil {
		return nil, fmt.Errorf("agentloop: no directory of the sessions' tools")
	}
	infos, err := dir.ListTools(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if info.Online && !r.Has(info.Name) {
			tools = append(tools, NewRemoteTool(info.ToolSpec, sessionID, d))
		}
	}
	return tools, nil
}

// Resolve returns the tool a name stands for in a run of the session: the
// built-in tool of that name, a tool set's, else the session's remote
// tool, executed through d either way. It does not check that
// the session (or the set) has the tool: the engine judges the call
// (unknown tool, offline session, a set not listed yet) and its answer
// reaches the model like any other. A name under a set's prefix is the
// set's, listed or not.
func (r *Registry) Resolve(name, sessionID string, d Dispatcher) toolgate.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if b, ok := r.builtins[name]; ok {
		return builtinThroughGateway(b, d)
	}
	t, ts, ok := r.setToolLocked(name)
	if ok {
		return setToolThroughGateway(t, ts.Source(), d)
	}
	if ts != nil {
		gt := NewRemoteTool(toolgate.ToolSpec{Name: name}, "", d)
		gt.source = ts.Source()
		return gt
	}
	return NewRemoteTool(toolgate.ToolSpec{Name: name}, sessionID, d)
}

// builtinThroughGateway wraps a built-in tool so that its calls are
// dispatched, and stored, by the engine.
func builtinThroughGateway(b toolgate.Tool, d Dispatcher) *GatewayTool {
	return &GatewayTool{spec: toolgate.SpecOf(b), source: toolgate.ToolSource{Kind: toolgate.SourceBuiltin}, dispatcher: d, estimates: b}
}

// setToolThroughGateway wraps a tool set's tool so that its calls are
// dispatched, and stored, by the engine.
func setToolThroughGateway(t toolgate.Tool, source toolgate.ToolSource, d Dispatcher) *GatewayTool {
	return &GatewayTool{spec: toolgate.SpecOf(t), source: source, dispatcher: d, estimates: t}
}

// Definitions returns what the model is shown of the tools.
func Definitions(tools []toolgate.Tool) []Definition {
	defs := make([]Definition, 0, len(tools))
	for _, t := range tools {
		defs = append(defs, Definition{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()})
	}
	return defs
}

package agenthost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpimport"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/store"
)

// Tools are the tools that run inside the gateway, built before the
// engine, which runs them (Builtins): the registry with the built-in
// tools, the imported MCP servers' and the sandbox's tool sets, the hook
// chain every call and registration passes, and the output guard.
type Tools struct {
	Registry *agentloop.Registry
	Hooks    *toolgate.Hooks

	guard outputGuard
	// imports are the imported MCP servers' tool sets, in the registry;
	// their connection loops run from StartImports to Close.
	imports []*mcpimport.Server
	// sandbox is the sandboxed tools' set (nil without a sandbox
	// directory), in the registry; Close closes it.
	sandbox *sandbox.ToolSet
	// orphans is signalled by the engine when the runs of stopped nodes
	// are to be claimed (engine.Options.OrphanRuns).
	orphans chan struct{}
}

// NewTools builds the hook chain (with the tool-name policy), the registry
// with the built-in tools, the imported MCP servers (offline until
// StartImports) and the sandboxed tools, over the store st.
func NewTools(opts Options, st *store.Store, log *slog.Logger) (*Tools, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	hooks := &toolgate.Hooks{}
	if opts.ToolNamePattern != "" {
		re, err := regexp.Compile(opts.ToolNamePattern)
		if err != nil {
			return nil, fmt.Errorf("tool name pattern: %w", err)
		}
		hooks.OnBeforeRegister(toolgate.ToolNamePolicy(re))
	}
	reg := agentloop.NewRegistry(hooks)
	if opts.HTTPRequestRuns != "" && opts.HTTPRequestRuns != "agent" && opts.HTTPRequestRuns != "all" {
		return nil, fmt.Errorf("--http-request-runs must be agent or all, not %q", opts.HTTPRequestRuns)
	}
	httpRequest, err := agentloop.NewHTTPRequestTool(agentloop.HTTPRequestOptions{Allow: opts.HTTPAllow, SessionRuns: opts.HTTPRequestRuns == "all"})
	if err != nil {
		return nil, err
	}
	builtins := append([]toolgate.Tool{agentloop.NewCurrentTimeTool(now), agentloop.NewCallHistoryTool(callHistory{st}), httpRequest},
		agentloop.NewMemoryTools(memoryNotes{st: st, now: now})...)
	builtins, err = withoutDisabled(builtins, opts.DisabledBuiltins)
	if err != nil {
		return nil, err
	}
	for _, t := range builtins {
		if err := reg.AddBuiltin(t); err != nil {
			return nil, err
		}
	}
	t := &Tools{Registry: reg, Hooks: hooks, guard: newOutputGuard(opts), orphans: make(chan struct{}, 1)}
	if t.imports, err = importMCPServers(reg, opts, t.guard.redactJSON, log); err != nil {
		return nil, err
	}
	if t.sandbox, err = openSandbox(reg, opts, log); err != nil {
		return nil, err
	}
	return t, nil
}

// Builtins returns the tools as the engine runs them.
func (t *Tools) Builtins() engine.BuiltinTools { return builtinTools{t.Registry} }

// OrphanRuns is the signal the engine sends when the runs of stopped nodes
// are to be claimed (engine.Options.OrphanRuns).
func (t *Tools) OrphanRuns() chan<- struct{} { return t.orphans }

// StartImports starts the imported MCP servers' connection loops. The
// process calls it after resuming: the open calls of imported tools a
// stopped process left are not run again (their tools are not listed yet
// then) and end timed_out at their deadline.
func (t *Tools) StartImports(log *slog.Logger) {
	for _, s := range t.imports {
		log.Info("importing the tools of an MCP server", "mcp_server", s.Name())
		s.Start()
	}
}

// Close stops the connection loops, all at once (a command may take its
// grace period to exit): sessions closed, commands' process groups ended;
// then the sandboxed tools' watcher and runtime. The process calls it
// after the engine stopped.
func (t *Tools) Close() {
	var wg sync.WaitGroup
	for _, s := range t.imports {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
	if t.sandbox != nil {
		t.sandbox.Close()
	}
}

// callHistory is the call history the call_history tool reads.
type callHistory struct{ st *store.Store }

// ListCalls implements agentloop.CallHistory.
func (h callHistory) ListCalls(ctx context.Context, q toolgate.CallQuery) (*toolgate.CallList, error) {
	return engine.ListCalls(ctx, h.st, q)
}

// builtinTools is the registry as the engine's engine.BuiltinTools.
type builtinTools struct{ *agentloop.Registry }

// Builtin implements engine.BuiltinTools.
func (b builtinTools) Builtin(name string) (engine.BuiltinTool, bool) {
	t, ok := b.Registry.Builtin(name)
	if !ok {
		return nil, false
	}
	return builtinTool{t}, true
}

// builtinTool is an agent loop tool as the engine runs it.
type builtinTool struct{ toolgate.Tool }

// Spec implements engine.BuiltinTool.
func (t builtinTool) Spec() toolgate.ToolSpec { return toolgate.SpecOf(t.Tool) }

// Unavailable implements engine.BuiltinTool: an imported MCP server's tool
// while the server is down.
func (t builtinTool) Unavailable() error {
	if a, ok := t.Tool.(toolgate.Availability); ok {
		return a.Unavailable()
	}
	return nil
}

// Estimate implements engine.BuiltinTool.
func (t builtinTool) Estimate(args json.RawMessage) float64 {
	return agentloop.CallEstimate(t.Tool, args)
}

// SafeToRerun implements engine.BuiltinTool.
func (t builtinTool) SafeToRerun(args json.RawMessage) bool {
	rr, ok := t.Tool.(toolgate.Rerunnable)
	return !ok || rr.SafeToRerun(args)
}

// Run implements engine.BuiltinTool: the tool executes with the call's
// progress reporter, and on behalf of the session whose token started the
// call's run (toolgate.WithCallerSession), from that run's client address
// (toolgate.WithCallerAddress).
func (t builtinTool) Run(ctx context.Context, args json.RawMessage, call engine.BuiltinCall) (json.RawMessage, error) {
	ctx = toolgate.WithProgressReporter(ctx, call.Progress)
	if call.CallerSession != "" {
		ctx = toolgate.WithCallerSession(ctx, call.CallerSession)
		if call.CallerAddress != "" {
			ctx = toolgate.WithCallerAddress(ctx, call.CallerAddress)
		}
	}
	res, err := t.Execute(ctx, args)
	return res.Output, err
}

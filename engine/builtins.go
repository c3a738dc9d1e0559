package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// builtinCalls run the calls of the tools inside the gateway (built-in,
// imported, sandboxed): checked and stored like any call, executed here.
type builtinCalls struct {
	*core

	mu      sync.Mutex
	entries map[string]*toolEntry // compiled schemas of built-in tools

	// runAddresses is the client address each run in progress that a
	// session's token started came from (the agent's launch sets it), for
	// the built-in calls of that run (BuiltinCall.CallerAddress).
	runAddresses sync.Map // run id → address
}

// admitRemote decides whether a client may register spec: no shadowing of
// a built-in tool (CONFLICT), and every registration rule of the hook
// chain (the tool-name policy among them).
func (e *builtinCalls) admitRemote(sid string, spec toolgate.ToolSpec) error {
	if e.builtins != nil {
		return e.builtins.CheckRemote(sid, spec)
	}
	return e.hooks.CheckRegistration(sid, spec)
}

// builtinEntry returns a built-in tool with its compiled schema.
func (e *builtinCalls) builtinEntry(name string) (BuiltinTool, *toolEntry, error) {
	if e.builtins == nil {
		return nil, nil, toolgate.Errorf(toolgate.EToolNotFound, "no built-in tool %q; a remote tool needs session_id", name)
	}
	tool, ok := e.builtins.Builtin(name)
	if !ok {
		return nil, nil, toolgate.Errorf(toolgate.EToolNotFound, "no built-in tool %q; a remote tool needs session_id", name)
	}
	spec := tool.Spec()
	e.mu.Lock()
	defer e.mu.Unlock()
	entry := e.entries[name]
	// An imported MCP server's tool may come back changed: a new entry.
	if entry == nil || !reflect.DeepEqual(entry.spec, spec) {
		var err error
		if entry, err = newToolEntry(e.schemas, spec, time.Time{}); err != nil {
			return nil, nil, err
		}
		e.entries[name] = entry
	}
	return tool, entry, nil
}

// awaitListing lets a call of an imported MCP server's tool made before
// that server has listed its tools (the gateway just started, a run
// resumed) wait for the listing, for at most the call's timeout, rather
// than be refused as unknown; TOOL_OFFLINE when the server has not listed
// by then (BuiltinTools.AwaitListing).
func (e *builtinCalls) awaitListing(ctx context.Context, req toolgate.CallRequest) error {
	if e.builtins == nil {
		return nil
	}
	wait, err := e.callTimeout(req.TimeoutMS, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return e.builtins.AwaitListing(ctx, req.Tool)
}

// dispatchBuiltin stores a call of a built-in tool (session_id NULL) like
// any other call, so the history has it, and runs it unless it awaits
// approval.
func (e *builtinCalls) dispatchBuiltin(ctx context.Context, req toolgate.CallRequest, args json.RawMessage, opts CallOptions) (*toolgate.Call, bool, error) {
	if err := e.awaitListing(ctx, req); err != nil {
		return nil, false, err // not stored: the tool's server has not listed yet
	}
	tool, entry, err := e.builtinEntry(req.Tool)
	if err != nil {
		return nil, false, err
	}
	if err := tool.Unavailable(); err != nil {
		return nil, false, err // not stored: the tool cannot run now
	}
	if err := entry.validateArgs(ctx, args); err != nil {
		return nil, false, err
	}
	timeout, err := e.callTimeout(req.TimeoutMS, entry.spec.TimeoutMS)
	if err != nil {
		return nil, false, err
	}
	check := toolgate.CallCheck{RunID: opts.RunID, Tool: req.Tool, Args: args, Source: e.builtins.SourceOf(req.Tool)}
	if err := e.hooks.CheckCall(ctx, check); err != nil {
		return nil, false, err
	}
	// The call keeps the tool's estimate for these arguments.
	spec := entry.spec
	if c := tool.Estimate(args); c > 0 {
		spec.EstimatedCost = c
	}
	now := e.now()
	row, created, err := e.storeCall(ctx, "", req.Tool, args, spec, timeout, false, opts, now)
	if err != nil || !created {
		return callOf(row), false, err
	}
	if row.Status == string(toolgate.StatusPending) {
		e.startBuiltin(row, tool)
	}
	e.log.Debug("built-in call "+row.Status, "call", row.ID, "tool", req.Tool)
	return row.Call(), true, nil
}

// startBuiltin runs a built-in tool for a stored call in the background,
// until its deadline or the engine's close, and stores the outcome. A
// call still open when the process stops is run again at the next start
// (resumeBuiltinCalls); one whose deadline passed ends timed_out through
// the deadline queue. A call of a run that a session's token started runs
// on behalf of that session (BuiltinCall.CallerSession), so a built-in
// tool such as call_history shows that session no one else's calls, and
// from its run's client address (BuiltinCall.CallerAddress), so the
// sandbox shares its slots per address too.
func (e *builtinCalls) startBuiltin(row *store.CallRow, tool BuiltinTool) {
	id, args := row.ID, json.RawMessage(row.Args)
	caller, address := "", ""
	if row.RunID.Valid {
		if a, ok := e.runAddresses.Load(row.RunID.String); ok {
			address = a.(string)
		}
		run, err := e.st.GetRun(e.life, row.RunID.String)
		if err != nil {
			e.log.Error("read the run of a built-in call", "call", id, "err", err)
			return // the deadline queue ends the call
		}
		if run != nil {
			caller = run.StartedBySession
		}
	}
	go func() {
		// No deadline of its own (progress moves the call's on): the
		// execution runs until the call ends (running.stop, whether it
		// was answered, timed out or cancelled) or the engine closes.
		ctx, cancel := context.WithCancel(e.life)
		defer cancel()
		defer e.running.started(id, cancel)()
		// Registered first, then the call looked at: its end takes it out
		// of the open set before it stops the running calls, so a call
		// that ended before the registration (cancelled as soon as it was
		// stored) is seen ended here, and one that ends after it is
		// stopped through it. Either way no execution outlives its call.
		if len(e.waiters.stillOpen([]string{id})) == 0 {
			return
		}
		call := BuiltinCall{Progress: func(p json.RawMessage) { e.builtinProgress(id, p) }}
		if caller != "" {
			call.CallerSession, call.CallerAddress = caller, address
		}
		started := e.now()
		output, err := tool.Run(ctx, args, call)
		if ctx.Err() != nil {
			return // timed out (the deadline queue ends it) or shutting down
		}
		o := store.Outcome{Status: toolgate.StatusCompleted, Output: output}
		if len(o.Output) == 0 {
			o.Output = []byte("null")
		}
		if err != nil {
			o = store.Outcome{Status: toolgate.StatusFailed, ErrorCode: toolgate.ErrorCode(err), ErrorMessage: toolgate.ErrorMessage(err)}
			var te *toolgate.Error
			if errors.As(err, &te) && len(te.Details) > 0 {
				o.ErrorDetails, _ = json.Marshal(te.Details)
			} else if !errors.As(err, &te) {
				e.log.Error("built-in tool failed", "tool", tool.Name(), "call", id, "err", err)
			}
		}
		ended, werr := store.WriteValue(context.Background(), e.st, func(tx *store.Tx) (bool, error) {
			if err := tx.MarkDelivered([]string{id}, started); err != nil {
				return false, err
			}
			return e.nodes.finishCall(tx, id, o, e.now())
		})
		if werr != nil {
			e.log.Error("store built-in call outcome", "call", id, "err", werr)
			return
		}
		if ended {
			// No creation time: the round-trip histogram is of calls
			// answered by clients.
			e.afterCallsEnded(endedCall{id: id, status: o.Status})
		}
	}()
}

// resumeBuiltinCalls runs again the built-in calls a stopped process left
// open (pending), so a run waiting on one goes on.
func (e *builtinCalls) resumeBuiltinCalls(ctx context.Context) error {
	if e.nodes.resumeBuiltins(ctx) {
		return nil // other nodes may be running them (cluster.go)
	}
	rows, err := e.st.OpenBuiltinCalls(ctx)
	if err != nil {
		return err
	}
	for i := range rows {
		e.resumeBuiltinCall(ctx, &rows[i])
	}
	return nil
}

// resumeBuiltinCall runs again an open call of a tool inside the gateway
// that a stopped process (or node) was running, unless its tool says it
// must not run again with these arguments (BuiltinTool.SafeToRerun): that
// call ends failed with INTERRUPTED.
func (e *builtinCalls) resumeBuiltinCall(_ context.Context, r *store.CallRow) {
	tool, _, err := e.builtinEntry(r.Tool)
	if err != nil {
		e.log.Warn("open call of an unknown built-in tool left to time out", "call", r.ID, "tool", r.Tool)
		return
	}
	e.waiters.opened(r.ID, "", 0) // stored already: counted, never refused
	if !tool.SafeToRerun(json.RawMessage(r.Args)) {
		e.endInterrupted(r)
		return
	}
	e.startBuiltin(r, tool)
}

// endInterrupted ends failed, with INTERRUPTED, an open call that a stopped
// process (or node) was running and that its tool says must not run again
// with these arguments: it may have had its effect already (a POST sent),
// and only the caller can tell whether to make it again.
func (e *builtinCalls) endInterrupted(r *store.CallRow) {
	o := store.Outcome{Status: toolgate.StatusFailed, ErrorCode: toolgate.EInterrupted,
		ErrorMessage: r.Tool + " was running when the gateway stopped and is not run again on its own: it may have had its effect already; check, then call it again if need be"}
	ended, err := store.WriteValue(context.Background(), e.st, func(tx *store.Tx) (bool, error) {
		return e.nodes.finishCall(tx, r.ID, o, e.now()) // claimed by this node, with others
	})
	if err != nil {
		e.log.Error("end an interrupted built-in call", "call", r.ID, "err", err)
		return // the deadline queue ends it
	}
	if ended {
		e.log.Warn("built-in call interrupted by a stop is not run again", "call", r.ID, "tool", r.Tool)
		e.afterCallsEnded(endedCall{id: r.ID, status: o.Status})
	}
}

package server

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/store"
)

// admitRemote decides whether a client may register spec: no shadowing of
// a built-in tool (CONFLICT), and every registration rule of the hook
// chain (the tool-name policy among them).
func (e *Engine) admitRemote(sid string, spec toolgate.ToolSpec) error {
	if e.builtins != nil {
		return e.builtins.CheckRemote(sid, spec)
	}
	return e.hooks.CheckRegistration(sid, spec)
}

// builtinEntry returns a built-in tool with its compiled schema.
func (e *Engine) builtinEntry(name string) (toolgate.Tool, *toolEntry, error) {
	if e.builtins == nil {
		return nil, nil, toolgate.Errorf(toolgate.EToolNotFound, "no built-in tool %q; a remote tool needs session_id", name)
	}
	tool, ok := e.builtins.Builtin(name)
	if !ok {
		return nil, nil, toolgate.Errorf(toolgate.EToolNotFound, "no built-in tool %q; a remote tool needs session_id", name)
	}
	spec := toolgate.SpecOf(tool)
	e.builtinMu.Lock()
	defer e.builtinMu.Unlock()
	entry := e.builtinEntries[name]
	// An imported MCP server's tool may come back changed: a new entry.
	if entry == nil || !reflect.DeepEqual(entry.spec, spec) {
		var err error
		if entry, err = newToolEntry(e.schemas, spec, time.Time{}); err != nil {
			return nil, nil, err
		}
		e.builtinEntries[name] = entry
	}
	return tool, entry, nil
}

// awaitListing lets a call of an imported MCP server's tool made before
// that server has listed its tools (the gateway just started, a run
// resumed) wait for the listing, for at most the call's timeout, rather
// than be refused as unknown; TOOL_OFFLINE when the server has not listed
// by then (agentloop.Registry.AwaitListing).
func (e *Engine) awaitListing(ctx context.Context, req toolgate.CallRequest) error {
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
func (e *Engine) dispatchBuiltin(ctx context.Context, req toolgate.CallRequest, args json.RawMessage, opts CallOptions) (*toolgate.Call, bool, error) {
	if err := e.awaitListing(ctx, req); err != nil {
		return nil, false, err // not stored: the tool's server has not listed yet
	}
	tool, entry, err := e.builtinEntry(req.Tool)
	if err != nil {
		return nil, false, err
	}
	if a, ok := tool.(toolgate.Availability); ok {
		if err := a.Unavailable(); err != nil {
			return nil, false, err // not stored: the tool cannot run now
		}
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
	if c := agentloop.CallEstimate(tool, args); c > 0 {
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
// on behalf of that session (toolgate.WithCallerSession), so a built-in
// tool such as call_history shows that session no one else's calls, and
// from its run's client address (toolgate.WithCallerAddress), so the
// sandbox shares its slots per address too.
func (e *Engine) startBuiltin(row *store.CallRow, tool toolgate.Tool) {
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
		ctx = toolgate.WithProgressReporter(ctx, func(p json.RawMessage) { e.builtinProgress(id, p) })
		if caller != "" {
			ctx = toolgate.WithCallerSession(ctx, caller)
			if address != "" {
				ctx = toolgate.WithCallerAddress(ctx, address)
			}
		}
		started := e.now()
		res, err := tool.Execute(ctx, args)
		if ctx.Err() != nil {
			return // timed out (the deadline queue ends it) or shutting down
		}
		o := store.Outcome{Status: toolgate.StatusCompleted, Output: res.Output}
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
			if e.shared() {
				// Unless another node claimed the call meanwhile.
				return tx.FinishOwnCall(id, o, e.now())
			}
			return tx.FinishCall(id, o, e.now())
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
func (e *Engine) resumeBuiltinCalls(ctx context.Context) error {
	if e.shared() {
		// Other nodes may be running them: only those of stopped nodes
		// are taken over, now and by the sweep (claimOrphans).
		e.claimOrphans(ctx)
		return nil
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
// must not run again with these arguments (toolgate.Rerunnable): that
// call ends failed with INTERRUPTED.
func (e *Engine) resumeBuiltinCall(_ context.Context, r *store.CallRow) {
	tool, _, err := e.builtinEntry(r.Tool)
	if err != nil {
		e.log.Warn("open call of an unknown built-in tool left to time out", "call", r.ID, "tool", r.Tool)
		return
	}
	e.waiters.opened(r.ID, "", 0) // stored already: counted, never refused
	if rr, ok := tool.(toolgate.Rerunnable); ok && !rr.SafeToRerun(json.RawMessage(r.Args)) {
		e.endInterrupted(r)
		return
	}
	e.startBuiltin(r, tool)
}

// endInterrupted ends failed, with INTERRUPTED, an open call that a stopped
// process (or node) was running and that its tool says must not run again
// with these arguments: it may have had its effect already (a POST sent),
// and only the caller can tell whether to make it again.
func (e *Engine) endInterrupted(r *store.CallRow) {
	o := store.Outcome{Status: toolgate.StatusFailed, ErrorCode: toolgate.EInterrupted,
		ErrorMessage: r.Tool + " was running when the gateway stopped and is not run again on its own: it may have had its effect already; check, then call it again if need be"}
	ended, err := store.WriteValue(context.Background(), e.st, func(tx *store.Tx) (bool, error) {
		if e.shared() {
			return tx.FinishOwnCall(r.ID, o, e.now()) // claimed by this node
		}
		return tx.FinishCall(r.ID, o, e.now())
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

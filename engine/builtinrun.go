package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/toolgate/toolgate/store"
)

// runningBuiltins are the calls of tools called without a session (built-in
// tools, imported MCP servers' tools) executing now, each with the cancel of
// its execution's context: a call that ends any other way (cancelled by its
// caller, timed out) stops its execution, so an MCP server is told
// notifications/cancelled and a built-in tool stops working for no one.
type runningBuiltins struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc // by call id
}

func newRunningBuiltins() *runningBuiltins {
	return &runningBuiltins{cancels: map[string]context.CancelFunc{}}
}

// started records a call's execution; done forgets it.
func (r *runningBuiltins) started(id string, cancel context.CancelFunc) (done func()) {
	r.mu.Lock()
	r.cancels[id] = cancel
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.cancels, id)
		r.mu.Unlock()
	}
}

// stop cancels the execution of a call that has ended, if it runs.
func (r *runningBuiltins) stop(id string) {
	r.mu.Lock()
	cancel := r.cancels[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// builtinProgress stores a progress report of a call executing inside the
// gateway and tells those waiting on the call, as a client's tool_progress
// does (ReportProgress, progressDeadline). A report that is not JSON, or is over
// 16 KiB, is dropped.
func (e *builtinCalls) builtinProgress(id string, progress json.RawMessage) {
	if len(progress) == 0 {
		progress = json.RawMessage("null")
	}
	if len(progress) > 16<<10 || !json.Valid(progress) {
		e.log.Warn("progress report of a built-in call dropped: not JSON of at most 16 KiB", "call", id)
		return
	}
	progress = json.RawMessage(compactJSON(progress))
	now := e.now()
	deadline, err := store.WriteValue(e.life, e.st, func(tx *store.Tx) (time.Time, error) {
		row, err := tx.GetCall(id)
		if err != nil || row == nil {
			return time.Time{}, err
		}
		deadline := e.progressDeadline(row, now)
		ok, err := tx.SetProgress(id, progress, deadline)
		if err != nil || !ok {
			return time.Time{}, err
		}
		return deadline, nil
	})
	if err != nil {
		e.log.Warn("store the progress of a built-in call", "call", id, "err", err)
		return
	}
	if deadline.IsZero() {
		return // the call has ended
	}
	e.deadlines.schedule(id, deadline)
	e.progress.reported(id, progress)
}

// has reports whether a call's tool is running here.
func (r *runningBuiltins) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels[id] != nil
}

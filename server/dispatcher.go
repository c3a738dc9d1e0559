package server

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
)

// engineDispatcher is the engine as the agent loop's Dispatcher: every
// call of a run goes through Dispatch and is waited on like any caller's.
type engineDispatcher struct{ e *Engine }

// Dispatch implements agentloop.Dispatcher.
func (d engineDispatcher) Dispatch(ctx context.Context, req agentloop.DispatchRequest) (*toolgate.Call, error) {
	call, _, err := d.e.Dispatch(ctx, toolgate.CallRequest{SessionID: req.SessionID, Tool: req.Tool, Args: req.Args},
		CallOptions{IdempotencyKey: req.IdempotencyKey, RunID: req.RunID})
	return call, err
}

// Wait implements agentloop.Dispatcher: it returns once the call has
// ended, passing on progress reports meanwhile.
func (d engineDispatcher) Wait(ctx context.Context, id string, progress func(json.RawMessage)) (*toolgate.Call, error) {
	e := d.e
	updates, stop := e.watchProgress(id)
	defer stop()
	for {
		ended, _ := e.waiters.wait(id)
		c, err := e.GetCall(ctx, id)
		if err != nil || c.Status.Final() {
			e.waiters.release(id, ended)
			return c, err
		}
		select {
		case <-ended:
			// The call ended; read it again.
		case p := <-updates:
			e.waiters.release(id, ended)
			if progress != nil {
				progress(p)
			}
		case <-ctx.Done():
			e.waiters.release(id, ended)
			return nil, ctx.Err()
		}
	}
}

// watchProgress subscribes to a call's progress reports; stop ends it.
func (e *Engine) watchProgress(callID string) (<-chan json.RawMessage, func()) {
	ch := make(chan json.RawMessage, 8)
	e.progressMu.Lock()
	subs := e.progressSubs[callID]
	if subs == nil {
		subs = map[chan json.RawMessage]struct{}{}
		e.progressSubs[callID] = subs
	}
	subs[ch] = struct{}{}
	e.progressMu.Unlock()
	return ch, func() {
		e.progressMu.Lock()
		delete(subs, ch)
		if len(subs) == 0 {
			delete(e.progressSubs, callID)
		}
		e.progressMu.Unlock()
	}
}

// progressReported passes a stored progress report to the call's
// watchers; a watcher that is behind misses it (the latest progress is on
// the call record).
func (e *Engine) progressReported(callID string, progress json.RawMessage) {
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	for ch := range e.progressSubs[callID] {
		select {
		case ch <- progress:
		default:
		}
	}
}

// handlerEngine is the engine as the handlers see it: progress reports
// also reach the runs waiting on the call.
type handlerEngine struct{ *Engine }

// ReportProgress stores the report, then tells the call's watchers.
func (h handlerEngine) ReportProgress(ctx context.Context, sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
	ack, err := h.Engine.ReportProgress(ctx, sid, p)
	if err == nil {
		progress := p.Progress
		if len(progress) == 0 {
			progress = json.RawMessage("null")
		}
		h.Engine.progressReported(p.ID, json.RawMessage(compactJSON(progress)))
	}
	return ack, err
}

package engine

import (
	"context"
	"time"
)

// What the agent host (package agenthost) asks of the engine besides the
// calls and sessions every caller uses.

// Now returns the engine's clock's time.
func (e *Engine) Now() time.Time { return e.core.now() }

// Context returns the engine's life: it ends when the engine closes. Work
// the engine's callers run in the background (runs) runs under it.
func (e *Engine) Context() context.Context { return e.core.life }

// Shared reports whether other nodes share the database.
func (e *Engine) Shared() bool { return e.core.st.Shared() }

// RequireSession returns nil when the session is open (read in from the
// tables when another node created it), else the error a request naming
// it gets.
func (e *Engine) RequireSession(ctx context.Context, sid string) error {
	if e.core.ensureSession(ctx, sid) {
		return nil
	}
	return e.core.missingSession(ctx, sid)
}

// ResumeBuiltinCalls runs again the built-in calls a stopped process left
// open (pending), so a run waiting on one goes on; with other nodes, it
// claims those of stopped nodes.
func (e *Engine) ResumeBuiltinCalls(ctx context.Context) error {
	return e.core.builtinOps.resumeBuiltinCalls(ctx)
}

// RunFrom notes the client address of a run that a session's token
// started, for the built-in calls of that run (BuiltinCall.CallerAddress);
// done forgets it when the run ends.
func (e *Engine) RunFrom(runID, address string) (done func()) {
	e.core.builtinOps.runAddresses.Store(runID, address)
	return func() { e.core.builtinOps.runAddresses.Delete(runID) }
}

// SessionCounts returns how many sessions are open, and how many of them
// online (holding a stream, or polled recently).
func (e *Engine) SessionCounts() (open, online int) {
	now := e.core.now()
	open = e.core.sessions.count()
	e.core.sessions.each(func(s *sessionState) {
		if s.online(now, e.core.cfg.PollWait) {
			online++
		}
	})
	return open, online
}

// ToolsChanged tells the tool watchers (WatchTools) that the tools called
// without a session changed (an imported server's listing).
func (e *Engine) ToolsChanged() { e.core.toolWatch.changed("") }

package engine

import (
	"sync"

	"github.com/toolgate/toolgate"
)

// toolWatchers are told when the tools a caller can see change: a
// session's (registered, removed, gone with its session, or its session
// becoming reachable or not), or the gateway's own (an imported MCP
// server's list, or its server going up or down). The MCP endpoint keeps
// its listings, and its hosts' list_changed, by them.
type toolWatchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(sessionID string)
}

func newToolWatchers() *toolWatchers {
	return &toolWatchers{fns: map[int]func(string){}}
}

// add registers fn until the returned stop is called.
func (w *toolWatchers) add(fn func(sessionID string)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

// changed tells every watcher that sessionID's tools changed ("" for the
// gateway's own). It is called without the engine's locks held.
func (w *toolWatchers) changed(sessionID string) {
	w.mu.Lock()
	fns := make([]func(string), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(sessionID)
	}
}

// WatchTools makes the engine call fn after the tools a caller can see
// changed: with a session's id after that session registered or removed a
// tool, closed or expired, or became reachable or unreachable (a stream or
// poll opened, or its grace ran out: noticed at the next sweep); with ""
// after the tools called without a session changed (an imported MCP
// server's list, or the server going up or down). fn runs on the goroutine
// that made the change, with no lock of the engine held: it must return
// quickly (hand the work to a goroutine of its own) and may call the
// engine. stop ends the watch.
func (e *Tools) WatchTools(fn func(sessionID string)) (stop func()) {
	return e.toolWatch.add(fn)
}

// GatewayTools lists the tools called without a session — the built-in
// ones and the imported MCP servers' — sorted by name, as GET /api/tools
// lists them first.
func (e *Tools) GatewayTools() []toolgate.ToolInfo {
	if e.builtins == nil {
		return []toolgate.ToolInfo{}
	}
	return e.builtins.List()
}

// SessionIDs returns the ids of the open sessions, in no order.
func (e *Tools) SessionIDs() []string {
	var ids []string
	e.sessions.each(func(s *sessionState) { ids = append(ids, s.row.ID) })
	return ids
}

package engine

import (
	"encoding/json"
	"sync"
)

// progressWatchers passes the progress reports of calls to those watching
// them (a run waiting on its call). A report reaches the watchers only
// after it is stored; a watcher that is behind misses it, as the latest
// progress is on the call record. Each watcher's channel is in subs from
// watch until its stop, and a call with no watcher has no entry.
type progressWatchers struct {
	mu   sync.Mutex
	subs map[string]map[chan json.RawMessage]struct{} // by call id
}

func newProgressWatchers() *progressWatchers {
	return &progressWatchers{subs: map[string]map[chan json.RawMessage]struct{}{}}
}

// watch subscribes to a call's progress reports; stop ends it.
func (w *progressWatchers) watch(callID string) (updates <-chan json.RawMessage, stop func()) {
	ch := make(chan json.RawMessage, 8)
	w.mu.Lock()
	subs := w.subs[callID]
	if subs == nil {
		subs = map[chan json.RawMessage]struct{}{}
		w.subs[callID] = subs
	}
	subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(subs, ch)
		if len(subs) == 0 {
			delete(w.subs, callID)
		}
		w.mu.Unlock()
	}
}

// reported passes a stored progress report to the call's watchers, without
// waiting for any.
func (w *progressWatchers) reported(callID string, progress json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[callID] {
		select {
		case ch <- progress:
		default:
		}
	}
}

// watched reports whether anyone watches the call's progress.
func (w *progressWatchers) watched(callID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs[callID]) > 0
}

package engine

import "sync"

// callWaiters is who waits for which call to end, and which calls are
// known to be open. It keeps two invariants:
//
//   - A call is in open from just before its insert is submitted (or from
//     recovery at start) until its end is told (ended) or its insert fails
//     (notStored). So a waiter that registers while its call is open cannot
//     miss the end, and need not read the call first.
//   - openBySession counts the calls in open by their session (a built-in
//     tool's call, of no session, is not counted): what the limit of open
//     calls per session is checked against, without reading the store.
//   - Each call's channel is shared by all its waiters and closed exactly
//     once, by ended; it is forgotten when the call ends or when its last
//     waiter stops waiting (release), so waits on calls that never end here
//     leave nothing behind.
type callWaiters struct {
	mu            sync.Mutex
	waiting       map[string]*sharedWait // by call id
	open          map[string]string      // call id → its session ("" for none)
	openBySession map[string]int         // session id → its calls in open
}

// sharedWait is the channel closed when one call ends, with the count of
// those waiting on it.
type sharedWait struct {
	ch    chan struct{}
	count int
}

func newCallWaiters() *callWaiters {
	return &callWaiters{waiting: map[string]*sharedWait{}, open: map[string]string{}, openBySession: map[string]int{}}
}

// wait returns a channel closed when the call ends, and whether the call
// is known to be open (then it cannot have ended before the waiter was
// registered). Each waiter must call release unless the channel was closed.
func (w *callWaiters) wait(id string) (ended chan struct{}, open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.waiting[id]
	if s == nil {
		s = &sharedWait{ch: make(chan struct{})}
		w.waiting[id] = s
	}
	s.count++
	_, open = w.open[id]
	return s.ch, open
}

// release drops one waiter that stopped waiting before the call ended.
func (w *callWaiters) release(id string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.waiting[id]; s != nil && s.ch == ch {
		if s.count--; s.count <= 0 {
			delete(w.waiting, id)
		}
	}
}

// opened records a call of session sid ("" for none) about to be stored
// (or recovered) as open, unless the session already has maxPerSession
// calls open (a limit of 0 or less is none): then it records nothing and
// returns false.
func (w *callWaiters) opened(id, sid string, maxPerSession int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sid != "" {
		if maxPerSession > 0 && w.openBySession[sid] >= maxPerSession {
			return false
		}
		w.openBySession[sid]++
	}
	w.open[id] = sid
	return true
}

// forgetLocked drops an open call, and its count in its session's.
func (w *callWaiters) forgetLocked(id string) {
	sid, ok := w.open[id]
	if !ok {
		return
	}
	delete(w.open, id)
	if sid == "" {
		return
	}
	if w.openBySession[sid] <= 1 {
		delete(w.openBySession, sid)
	} else {
		w.openBySession[sid]--
	}
}

// openOf returns how many calls of session sid are open.
func (w *callWaiters) openOf(sid string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.openBySession[sid]
}

// notStored forgets a call whose storing failed.
func (w *callWaiters) notStored(id string) {
	w.mu.Lock()
	w.forgetLocked(id)
	w.mu.Unlock()
}

// ended wakes everyone waiting on a call whose end has committed, and
// forgets it.
func (w *callWaiters) ended(id string) {
	w.mu.Lock()
	s := w.waiting[id]
	delete(w.waiting, id)
	w.forgetLocked(id)
	w.mu.Unlock()
	if s != nil {
		close(s.ch)
	}
}

// stillOpen returns the ids known to be open, reusing ids's storage.
func (w *callWaiters) stillOpen(ids []string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	open := ids[:0]
	for _, id := range ids {
		if _, ok := w.open[id]; ok {
			open = append(open, id)
		}
	}
	return open
}

// waitedFor lists the calls someone on this node waits for.
func (w *callWaiters) waitedFor() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.waiting))
	for id := range w.waiting {
		ids = append(ids, id)
	}
	return ids
}

// known reports whether anyone here waits for the call or it is counted
// open here.
func (w *callWaiters) known(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, open := w.open[id]
	return open || w.waiting[id] != nil
}

package server

import "sync"

// callWaiters is who waits for which call to end, and which calls are
// known to be open. It keeps two invariants:
//
//   - A call is in open from just before its insert is submitted (or from
//     recovery at start) until its end is told (ended) or its insert fails
//     (notStored). So a waiter that registers while its call is open cannot
//     miss the end, and need not read the call first.
//   - Each call's channel is shared by all its waiters and closed exactly
//     once, by ended; it is forgotten when the call ends or when its last
//     waiter stops waiting (release), so waits on calls that never end here
//     leave nothing behind.
type callWaiters struct {
	mu      sync.Mutex
	waiting map[string]*sharedWait // by call id
	open    map[string]struct{}
}

// sharedWait is the channel closed when one call ends, with the count of
// those waiting on it.
type sharedWait struct {
	ch    chan struct{}
	count int
}

func newCallWaiters() *callWaiters {
	return &callWaiters{waiting: map[string]*sharedWait{}, open: map[string]struct{}{}}
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

// opened records a call about to be stored (or recovered) as open.
func (w *callWaiters) opened(id string) {
	w.mu.Lock()
	w.open[id] = struct{}{}
	w.mu.Unlock()
}

// notStored forgets a call whose storing failed.
func (w *callWaiters) notStored(id string) {
	w.mu.Lock()
	delete(w.open, id)
	w.mu.Unlock()
}

// ended wakes everyone waiting on a call whose end has committed, and
// forgets it.
func (w *callWaiters) ended(id string) {
	w.mu.Lock()
	s := w.waiting[id]
	delete(w.waiting, id)
	delete(w.open, id)
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

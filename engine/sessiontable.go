package engine

import (
	"sync"
	"time"
)

// sessionTable is the open sessions in memory, by id and by token hash. It
// keeps these invariants:
//
//   - A session is in both maps or in neither, under its row's id and
//     token hash.
//   - A session is added once its insert has committed (or when it is
//     recovered at start) and removed once its close has committed; so a
//     session found here is open in the store, but for a close in progress
//     (sessionState.closing).
//   - mu guards the maps and every field of every sessionState in them:
//     a session's fields are read and changed only inside the functions
//     handed to with, withToken, withEach, each and locked.
//
// The functions handed in run with the lock held: they must not block or
// call back into the table.
type sessionTable struct {
	mu      sync.Mutex
	byID    map[string]*sessionState
	byToken map[string]*sessionState
	// opened counts the listeners ever registered, to order each
	// session's (see listener.opened).
	opened uint64
	// closedAt remembers, for a while, the sessions removed because they
	// closed: a read of the tables that began before the close must not
	// put one back (cluster.go). Sessions never reopen.
	closedAt map[string]time.Time
}

func newSessionTable() *sessionTable {
	return &sessionTable{byID: map[string]*sessionState{}, byToken: map[string]*sessionState{}, closedAt: map[string]time.Time{}}
}

// add puts a session whose insert has committed into the table.
func (t *sessionTable) add(s *sessionState) {
	t.mu.Lock()
	t.byID[s.row.ID] = s
	t.byToken[s.row.TokenHash] = s
	t.mu.Unlock()
}

// remove takes a session whose close has committed out of the table,
// wakes its streams and polls a last time and ends them, telling them why
// it closed (reason, "closed" or "expired"). It reports whether the
// session was in the table.
func (t *sessionTable) remove(sid, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[sid]
	if s == nil {
		return false
	}
	delete(t.byID, sid)
	delete(t.byToken, s.row.TokenHash)
	t.closedAt[sid] = time.Now()
	if s.reachTimer != nil {
		s.reachTimer.Stop()
	}
	s.endReason = reason
	s.wakeLocked()
	s.closeListeners()
	return true
}

// with runs fn on open session sid; false, and fn not run, when there is
// none.
func (t *sessionTable) with(sid string, fn func(s *sessionState)) bool {
	return t.find(t.byID, sid, fn)
}

// withToken runs fn on the open session whose token has the hash; false,
// and fn not run, when there is none.
func (t *sessionTable) withToken(hash string, fn func(s *sessionState)) bool {
	return t.find(t.byToken, hash, fn)
}

// find runs fn on the session under key in one of the table's maps.
func (t *sessionTable) find(in map[string]*sessionState, key string, fn func(s *sessionState)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := in[key]
	if s == nil {
		return false
	}
	fn(s)
	return true
}

// withEach runs fn on each of the sessions ids that is open, in the order
// of ids, under one hold of the lock; i is the session's index in ids.
func (t *sessionTable) withEach(ids []string, fn func(i int, s *sessionState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, id := range ids {
		if s := t.byID[id]; s != nil {
			fn(i, s)
		}
	}
}

// each runs fn on every open session, in no particular order.
func (t *sessionTable) each(fn func(s *sessionState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byID {
		fn(s)
	}
}

// locked runs fn with the lock held, for one who holds a session already
// (its listener).
func (t *sessionTable) locked(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fn()
}

// nextListener numbers a listener being registered; the lock is held.
func (t *sessionTable) nextListener() uint64 {
	t.opened++
	return t.opened
}

// isOpen reports whether session sid is in the table.
func (t *sessionTable) isOpen(sid string) bool {
	return t.with(sid, func(*sessionState) {})
}

// count returns how many sessions are open.
func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// wake signals every stream and poll of session sid.
func (t *sessionTable) wake(sid string) {
	t.with(sid, (*sessionState).wakeLocked)
}

// closeAll ends every session's streams and polls, at shutdown; the
// sessions stay open in the store.
func (t *sessionTable) closeAll() {
	t.each((*sessionState).closeListeners)
}

// recentlyClosed reports, under the table's lock, whether sid was removed
// as closed lately.
func (t *sessionTable) recentlyClosedLocked(sid string) bool {
	_, ok := t.closedAt[sid]
	return ok
}

// forgetClosed drops the closes older than before.
func (t *sessionTable) forgetClosed(before time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, at := range t.closedAt {
		if at.Before(before) {
			delete(t.closedAt, id)
		}
	}
}

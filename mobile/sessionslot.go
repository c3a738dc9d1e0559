package mobile

import "sync"

// sessionSlot is the session the client uses and its place in the
// session's event log: the one owner of both, so the session and its
// cursor are always read and saved together.
type sessionSlot struct {
	mu          sync.Mutex
	sess        sessionCredentials
	haveSession bool
	cursor      int64
	haveCursor  bool // an event seen since this process resumed the session
}

// get returns the session's credentials, if there is a session.
func (s *sessionSlot) get() (sessionCredentials, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess, s.haveSession
}

// adopt makes sess the session, at cursor (not yet used: see position),
// and reports whether it was another session before.
func (s *sessionSlot) adopt(sess sessionCredentials, cursor int64) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = s.sess != sess
	s.sess, s.haveSession = sess, true
	s.cursor, s.haveCursor = cursor, false
	return changed
}

// dropCursor forgets the cursor, which the gateway refused as beyond the
// session's stream (its database was restored from a backup, or every
// event was pruned): the next connection asks for the open calls instead.
func (s *sessionSlot) dropCursor() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.haveCursor = 0, false
}

// forget drops the session (it was closed at the gateway).
func (s *sessionSlot) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.haveSession, s.sess = false, sessionCredentials{}
}

// saved returns what the store keeps of the session, nil when there is
// none.
func (s *sessionSlot) saved(gatewayURL string) *SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.haveSession {
		return nil
	}
	return &SessionState{GatewayURL: gatewayURL, SessionID: s.sess.id, Token: s.sess.token, Cursor: s.cursor}
}

// position returns the cursor to resume from, and whether to use it.
// A process that has just resumed its session asks for the open calls
// instead of replaying from the stored cursor: a call delivered before the
// cursor may still be unanswered.
func (s *sessionSlot) position() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor, s.haveCursor
}

// advance records an event's sequence number.
func (s *sessionSlot) advance(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq > s.cursor || !s.haveCursor {
		s.cursor = max(seq, s.cursor)
		s.haveCursor = true
	}
}

// setCursor records the cursor a poll reply names.
func (s *sessionSlot) setCursor(cursor int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.haveCursor = cursor, true
}

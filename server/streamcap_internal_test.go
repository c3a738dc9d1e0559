package server

// OpenListenersForTest counts the streams and held polls the engine holds
// for session sid (its own streams and polls and its places on
// multi-session ones), failing the test when the session's counts
// disagree with its set of listeners. For the external tests of the cap
// (streamcap_test.go).
func OpenListenersForTest(t interface{ Fatalf(string, ...any) }, srv *Server, sid string) int {
	n := -1
	srv.Engine.sessions.with(sid, func(s *sessionState) {
		n = len(s.listeners)
		if s.streams+s.polls != n {
			t.Fatalf("session %s counts %d streams and %d polls but holds %d listeners", sid, s.streams, s.polls, n)
		}
	})
	return n
}

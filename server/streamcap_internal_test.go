package server

// OpenListenersForTest counts the streams and held polls the engine holds
// for session sid (its own streams and polls and its places on
// multi-session ones), failing the test when the session's counts
// disagree with its set of listeners. For the external tests of the cap
// (streamcap_test.go).
func OpenListenersForTest(t interface{ Fatalf(string, ...any) }, srv *Server, sid string) int {
	n, err := srv.Engine.Delivery.Listeners(sid)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return n
}

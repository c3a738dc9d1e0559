package engine

import "testing"

// TestOpenCallCount: a session's count of open calls follows its calls
// from opened to ended or notStored, once each however often a call is
// told to end; at the limit a new call is refused and not recorded; calls
// of no session (built-in tools) are neither counted nor refused.
func TestOpenCallCount(t *testing.T) {
	w := newCallWaiters()
	if !w.opened("c1", "s", 2) || !w.opened("c2", "s", 2) {
		t.Fatal("a call under the limit was refused")
	}
	if w.opened("c3", "s", 2) {
		t.Fatal("a third call was let past a limit of 2")
	}
	if _, open := w.wait("c3"); open {
		t.Fatal("the refused call is recorded as open")
	}
	w.ended("c1")
	w.ended("c1") // told twice: counted once
	if n := w.openOf("s"); n != 1 {
		t.Fatalf("open after one ended (twice): %d, want 1", n)
	}
	if !w.opened("c4", "s", 2) {
		t.Fatal("refused after a call ended")
	}
	w.notStored("c4")
	w.ended("c2")
	if n, left := w.openOf("s"), len(w.openBySession); n != 0 || left != 0 {
		t.Fatalf("after every call ended: %d open, %d sessions counted; want none", n, left)
	}
	for i := range 5 {
		if !w.opened(string(rune('a'+i)), "", 1) {
			t.Fatal("a built-in call was refused")
		}
	}
	if len(w.openBySession) != 0 {
		t.Fatal("built-in calls were counted")
	}
	if !w.opened("recovered", "s", 0) || !w.opened("recovered2", "s", 0) || w.openOf("s") != 2 {
		t.Fatal("a limit of 0 refused, or did not count")
	}
}

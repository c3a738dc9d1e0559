package engine

import "testing"

// TestCallWaitersWakeOnEnd: the waiters of a call share one channel,
// closed when the call ends; a call known open stays so until it ends or
// its insert fails; a released waiter leaves nothing behind.
func TestCallWaitersWakeOnEnd(t *testing.T) {
	w := newCallWaiters()
	w.opened("a", "", 0)
	first, open := w.wait("a")
	second, _ := w.wait("a")
	if !open || first != second {
		t.Fatalf("wait on an open call: open=%v, shared channel=%v", open, first == second)
	}
	w.ended("a")
	select {
	case <-first:
	default:
		t.Fatal("the end of the call did not wake its waiters")
	}
	if _, open := w.wait("a"); open {
		t.Error("an ended call is still known open")
	}
	w.opened("b", "", 0)
	w.notStored("b")
	ch, open := w.wait("b")
	if open {
		t.Error("a call whose insert failed is known open")
	}
	w.release("b", ch)
	w.release("a", nil) // not a waiter of a's current channel: changes nothing
	if n := len(w.waiting); n != 1 {
		t.Errorf("%d calls waited on, want only a's waiter left", n)
	}
}

package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestReportProgressTellsWatchers: a progress report stored through the
// engine itself (not only through its HTTP handlers) reaches those watching
// the call, compacted as stored; a watcher that stopped gets nothing.
func TestReportProgressTellsWatchers(t *testing.T) {
	srv, sid := serveWithTool(t, nil, "slow")
	e := srv.Engine
	ctx := context.Background()
	call, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "slow", Args: json.RawMessage(`{}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	updates, stop := e.progress.watch(call.ID)
	defer stop()
	stopped, stopEarly := e.progress.watch(call.ID)
	stopEarly()
	if _, err := e.ReportProgress(ctx, sid, toolgate.ProgressReport{ID: call.ID, Progress: json.RawMessage(`{ "done": 1 }`)}); err != nil {
		t.Fatal(err)
	}
	// The watchers are told before ReportProgress returns.
	select {
	case p := <-updates:
		if string(p) != `{"done":1}` {
			t.Errorf("watcher got %s, want the stored {\"done\":1}", p)
		}
	default:
		t.Fatal("the watcher was not told of the report")
	}
	select {
	case p := <-stopped:
		t.Errorf("a stopped watcher got %s", p)
	default:
	}
}

// TestCallWaitersWakeOnEnd: the waiters of a call share one channel,
// closed when the call ends; a call known open stays so until it ends or
// its insert fails; a released waiter leaves nothing behind.
func TestCallWaitersWakeOnEnd(t *testing.T) {
	w := newCallWaiters()
	w.opened("a")
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
	w.opened("b")
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

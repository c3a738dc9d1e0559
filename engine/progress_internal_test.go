package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// TestReportProgressTellsWatchers: a progress report stored through the
// engine itself (not only through its HTTP handlers) reaches those watching
// the call, compacted as stored; a watcher that stopped gets nothing.
func TestReportProgressTellsWatchers(t *testing.T) {
	ctx := context.Background()
	srv, sid := serveWithTool(t, nil, "slow")
	call, err := srv.Engine.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "slow"}, "")
	if err != nil {
		t.Fatal(err)
	}
	e := srv.Engine
	updates, stop := e.core.progress.watch(call.ID)
	defer stop()
	stopped, stopEarly := e.core.progress.watch(call.ID)
	stopEarly()
	if _, err := e.Delivery.ReportProgress(ctx, sid, toolgate.ProgressReport{ID: call.ID, Progress: json.RawMessage(`{ "done": 1 }`)}); err != nil {
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

// A report stored before anyone waited on the call (the client answered
// the request with progress before the caller began to wait) is passed to
// the waiter from the call record, once.
func TestWaitCallProgressPassesAnEarlierReport(t *testing.T) {
	ctx := context.Background()
	srv, sid := serveWithTool(t, nil, "slow")
	e := srv.Engine
	call, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "slow"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delivery.ReportProgress(ctx, sid, toolgate.ProgressReport{ID: call.ID, Progress: json.RawMessage(`{"done":1}`)}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	var got []string
	_, err = e.Calls.WaitCallProgress(waitCtx, call.ID, func(p json.RawMessage) { got = append(got, string(p)) })
	if err == nil {
		t.Fatal("the call ended; it was never answered")
	}
	if len(got) != 1 || got[0] != `{"done":1}` {
		t.Fatalf("the waiter was passed %v, want the earlier report once", got)
	}
}

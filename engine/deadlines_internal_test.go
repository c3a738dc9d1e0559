package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// TestSweepEndsOverdueCalls: a call the deadline queue skips (here: its
// engine forgot it was open) is still ended timed_out by the next sweep.
// The test drives the queue by hand (tick) on a clock it moves: the
// queue's own loop would wait a real minute for the call's deadline.
func TestSweepEndsOverdueCalls(t *testing.T) {
	var mu sync.Mutex
	offset := time.Duration(0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(offset) }
	srv, sid := serveWithTool(t, func(cfg *Config) {
		cfg.Now = now
		cfg.SweepInterval = time.Hour // the test sweeps by hand
	}, "slow")
	e := srv.Engine
	ctx := context.Background()
	call, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "slow", Args: json.RawMessage(`{}`), TimeoutMS: 60000}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.core.waiters.notStored(call.ID) // the engine no longer knows the call is open

	mu.Lock()
	offset = 2 * time.Minute
	mu.Unlock()
	// The queue's expiry runs here, before the checks below.
	if taken, _ := e.core.deadlines.tick(); taken != 1 {
		t.Fatalf("the queue took %d deadlines, want the call's one", taken)
	}
	if got, err := e.Calls.GetCall(ctx, call.ID); err != nil || got.Status.Final() {
		t.Fatalf("the queue ended a call it should have skipped: %+v %v", got, err)
	}
	e.Sessions.Sweep(ctx)
	got, err := e.Calls.GetCall(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != toolgate.StatusTimedOut || got.Error == nil || got.Error.Code != toolgate.ETimeout {
		t.Fatalf("after the sweep: %+v", got)
	}
}

package server

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
	call, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "slow", Args: json.RawMessage(`{}`), TimeoutMS: 1000}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.waiters.notStored(call.ID) // the engine no longer knows the call is open

	mu.Lock()
	offset = 5 * time.Second
	mu.Unlock()
	e.deadlines.schedule("nudge", now()) // let the queue run its (skipping) expiry
	if got, _ := e.GetCall(ctx, call.ID); got.Status.Final() {
		t.Fatalf("the queue ended a call it should have skipped: %s", got.Status)
	}
	e.Sweep(ctx)
	got, err := e.GetCall(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != toolgate.StatusTimedOut || got.Error == nil || got.Error.Code != toolgate.ETimeout {
		t.Fatalf("after the sweep: %+v", got)
	}
}

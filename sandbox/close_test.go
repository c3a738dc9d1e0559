package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestCloseWaitsForRunningCalls: Close frees the runtime only after the
// calls running in it have ended. A call is interrupted by its own
// context (the engine cancels every call before the tools close), not by
// Close freeing its module's memory under it, which raced the call
// growing that memory.
func TestCloseWaitsForRunningCalls(t *testing.T) {
	set := openSet(t, func(o *sandbox.Options) { o.CloseWait = time.Minute }, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "loop", spec)
	})
	loop := set.tool(t, "loop")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	callEnded := make(chan error, 1)
	go func() {
		_, err := loop.Execute(ctx, json.RawMessage(`{}`))
		callEnded <- err
	}()
	testwait.Until(t, 30*time.Second, "the looping call to run", func() bool { return set.Running() == 1 })

	closed := make(chan error, 1)
	go func() { closed <- set.Close() }()
	select {
	case err := <-callEnded:
		t.Fatalf("Close ended the running call (%v) instead of waiting for it", err)
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a call was still running in the runtime it frees", err)
	case <-time.After(300 * time.Millisecond):
	}

	cancel()
	if err := <-callEnded; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call ended with %v; want its context's cancellation", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return after the last call ended")
	}
	if _, err := loop.Execute(context.Background(), json.RawMessage(`{}`)); err == nil {
		t.Fatal("a call after Close ran")
	}
}

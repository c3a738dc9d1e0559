package server

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
)

// TestCallDuringFailedCloseStaysOpen: a call stored while a close of its
// session was in progress, a close that then fails (a database error, or
// its caller gone before it was written), is not cancelled: the session
// stays open and the call goes out. Only a close that is written cancels.
func TestCallDuringFailedCloseStaysOpen(t *testing.T) {
	srv, sid := serveWithTool(t, nil, "echo")
	e := srv.Engine
	ctx := context.Background()
	var once sync.Once
	e.Hooks().OnBeforeCall(func(context.Context, agentloop.CallCheck) error {
		// What closeSession does before its write; the write then fails.
		once.Do(func() { e.countClosing(sid, +1) })
		return nil
	})
	call, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{}`), TimeoutMS: 60000}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.countClosing(sid, -1) // closeSession's error path
	if call.Status != toolgate.StatusPending {
		t.Fatalf("call made during a close that failed: %s %+v, want pending", call.Status, call.Error)
	}
	// And the session takes calls again.
	again, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{}`)}, "")
	if err != nil || again.Status != toolgate.StatusPending {
		t.Fatalf("call after the failed close: %+v %v", again, err)
	}
}

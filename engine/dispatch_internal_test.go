package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
)

// The tests here race a call's storing with another request: Dispatch runs
// the before-call hooks between its checks and its insert, so a hook can
// do what another request would do in between.

// TestCallDuringFailedCloseStaysOpen: a call stored while a close of its
// session was in progress, a close that then fails (a database error, or
// its caller gone before it was written), is not cancelled: the session
// stays open and the call goes out. Only a close that is written cancels.
func TestCallDuringFailedCloseStaysOpen(t *testing.T) {
	srv, sid := serveWithTool(t, nil, "echo")
	e := srv.Engine
	ctx := context.Background()
	var once sync.Once
	e.Hooks().OnBeforeCall(func(context.Context, toolgate.CallCheck) error {
		// What closeSession does before its write; the write then fails.
		once.Do(func() { e.Sessions.countClosing(sid, +1) })
		return nil
	})
	call, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{}`), TimeoutMS: 60000}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.Sessions.countClosing(sid, -1) // closeSession's error path
	if call.Status != toolgate.StatusPending {
		t.Fatalf("call made during a close that failed: %s %+v, want pending", call.Status, call.Error)
	}
	// And the session takes calls again.
	again, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{}`)}, "")
	if err != nil || again.Status != toolgate.StatusPending {
		t.Fatalf("call after the failed close: %+v %v", again, err)
	}
}

// TestIdempotencyKeyRaceReturnsTheWinner: a request whose key was free
// when looked up, but taken by another request before its own insert, gets
// the other request's call (created false) instead of an error: the store's
// ErrDuplicateIdempotencyKey is what tells it so. The other request is
// made from inside the first one's before-call hook, which runs between
// the lookup and the insert.
func TestIdempotencyKeyRaceReturnsTheWinner(t *testing.T) {
	srv, sid := serveWithTool(t, nil, "echo")
	e := srv.Engine
	ctx := context.Background()
	req := toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{}`)}
	opts := CallOptions{IdempotencyKey: "raced"}
	var raced atomic.Bool // the racing request passes the hook too
	var winner *toolgate.Call
	var winnerErr error
	e.Hooks().OnBeforeCall(func(context.Context, toolgate.CallCheck) error {
		if raced.CompareAndSwap(false, true) {
			winner, _, winnerErr = e.Calls.Dispatch(ctx, req, opts)
		}
		return nil
	})
	got, created, err := e.Calls.Dispatch(ctx, req, opts)
	if winnerErr != nil || winner == nil {
		t.Fatalf("the racing request: %+v %v", winner, winnerErr)
	}
	if err != nil || created || got == nil || got.ID != winner.ID {
		t.Fatalf("the request that lost the race: %+v created=%v %v; want call %s, not created", got, created, err, winner.ID)
	}
}

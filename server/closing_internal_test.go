package server

import (
	"context"
	"encoding/json"
	"path/filepath"
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
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "toolgate.db")
	cfg.AgentKey = "test-agent-key"
	srv, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	e := srv.Engine
	s, err := e.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{{Name: "echo", Description: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	e.Hooks().OnBeforeCall(func(context.Context, agentloop.CallCheck) error {
		// What closeSession does before its write; the write then fails.
		once.Do(func() { e.countClosing(s.SessionID, +1) })
		return nil
	})
	call, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: s.SessionID, Tool: "echo", Args: json.RawMessage(`{}`), TimeoutMS: 60000}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.countClosing(s.SessionID, -1) // closeSession's error path
	if call.Status != toolgate.StatusPending {
		t.Fatalf("call made during a close that failed: %s %+v, want pending", call.Status, call.Error)
	}
	// And the session takes calls again.
	again, err := e.CreateCall(ctx, toolgate.CallRequest{SessionID: s.SessionID, Tool: "echo", Args: json.RawMessage(`{}`)}, "")
	if err != nil || again.Status != toolgate.StatusPending {
		t.Fatalf("call after the failed close: %+v %v", again, err)
	}
}

package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate"
)

// serveWithTool starts a server on a fresh database (configure may change
// its Config first) with one session offering tool, and returns the server
// and the session's id; it stops when the test ends.
func serveWithTool(t *testing.T, configure func(*Config), tool string) (*Server, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "toolgate.db")
	cfg.AgentKey = "test-agent-key"
	if configure != nil {
		configure(&cfg)
	}
	srv, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s, err := srv.Engine.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Engine.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{{Name: tool, Description: "a test tool"}}}); err != nil {
		t.Fatal(err)
	}
	return srv, s.SessionID
}

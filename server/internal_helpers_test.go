package server

import (
	"context"
	"path/filepath"
	"sync"
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
	srv, _ := startServer(t, cfg)
	ctx := context.Background()
	s, err := srv.Engine.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Engine.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{{Name: tool, Description: "a test tool"}}}); err != nil {
		t.Fatal(err)
	}
	return srv, s.SessionID
}

// startServer starts a server with cfg and serves until stop, which shuts
// it down as a process does at exit (and runs when the test ends, if not
// before).
func startServer(t *testing.T, cfg Config) (srv *Server, stop func()) {
	t.Helper()
	srv, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

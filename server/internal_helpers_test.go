package server

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
)

// testConfig is the configuration of a test's server: a fresh database,
// any free port, a known agent key.
func testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "toolgate.db")
	cfg.AgentKey = "test-agent-key"
	return cfg
}

// serveWithTool starts a server on a fresh database (configure may change
// its Config first) with one session offering tool, and returns the server
// and the session's id; it stops when the test ends.
func serveWithTool(t *testing.T, configure func(*Config), tool string) (*Server, string) {
	t.Helper()
	cfg := testConfig(t)
	if configure != nil {
		configure(&cfg)
	}
	srv, _ := startServer(t, cfg)
	return srv, newSessionWithTool(t, srv.Engine, toolgate.ToolSpec{Name: tool, Description: "a test tool"})
}

// newSessionWithTool creates a session of e offering one tool and returns
// the session's id.
func newSessionWithTool(t *testing.T, e *Engine, spec toolgate.ToolSpec) string {
	t.Helper()
	ctx := context.Background()
	s, err := e.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{spec}})
	if err != nil || res.Registered != 1 {
		t.Fatalf("register %s: %+v %v", spec.Name, res, err)
	}
	return s.SessionID
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

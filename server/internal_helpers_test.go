package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// The one way a test starts a gateway, for both test packages of this
// folder: ConfigForTest gives the settings, StartForTest runs the real
// Open, Listen, Serve and Close. The internal tests (package server) call
// them directly; the external ones (package server_test, helpers_test.go)
// reach them through these exported names, which exist only in tests.
var (
	ConfigForTest = testConfig
	StartForTest  = startServer
)

// AgentKeyForTest is the agent key of every test gateway.
const AgentKeyForTest = "tga_test"

// testConfig is the configuration of a test's gateway: a fresh database in
// the test's temp dir, any free loopback port, a known agent key and a
// short heartbeat (so that pings show up within a test).
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "toolgate.db")
	cfg.AgentKey = AgentKeyForTest
	cfg.Heartbeat = 200 * time.Millisecond
	return cfg
}

// startServer opens a gateway with cfg (logging nowhere), binds its address
// and serves until stop, which shuts it down and closes it as a process
// does at exit; stop runs when the test ends, if not before.
func startServer(t testing.TB, cfg Config) (srv *Server, stop func()) {
	t.Helper()
	return startServerLogging(t, cfg, nil)
}

// startServerLogging is startServer with the gateway's log lines sent to
// log (nil discards them).
func startServerLogging(t testing.TB, cfg Config, log *slog.Logger) (srv *Server, stop func()) {
	t.Helper()
	srv, err := Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
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
			if err := srv.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

// newSessionWithTool creates a session of e offering one tool and returns
// the session's id.
func newSessionWithTool(t *testing.T, e *Engine, spec toolgate.ToolSpec) string {
	t.Helper()
	ctx := context.Background()
	s, err := e.Sessions.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Tools.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{spec}})
	if err != nil || res.Registered != 1 {
		t.Fatalf("register %s: %+v %v", spec.Name, res, err)
	}
	return s.SessionID
}

package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// The engine's internal tests run a real engine over a real SQLite file
// in the test's temp dir, without the HTTP side: Open here opens the store,
// loads the agent key and builds the engine with the process's defaults,
// as package server does (server/wire.go), minus the tools inside the
// gateway.

// AgentKeyForTest is the agent key of every test engine.
const AgentKeyForTest = "tga_test"

// Config is what a test engine is opened with.
type Config struct {
	DBPath        string
	AgentKey      string // "" generates one into AgentKeyFile(DBPath)
	Now           func() time.Time
	SweepInterval time.Duration
}

// Server is a test engine and its store.
type Server struct {
	Engine *Engine
	Store  *store.Store
}

// testConfig is a fresh database in the test's temp dir and a known agent
// key.
func testConfig(t testing.TB) Config {
	return Config{DBPath: filepath.Join(t.TempDir(), "toolgate.db"), AgentKey: AgentKeyForTest}
}

// AgentKeyFile is the key file of the database at dbPath, as the process
// names it.
func AgentKeyFile(dbPath string) string {
	if dbPath == "" || dbPath == ":memory:" || strings.HasPrefix(dbPath, "postgres") {
		return ""
	}
	return dbPath + ".agent-key"
}

// testOptions are the process's defaults.
func testOptions(cfg Config, key *AgentKey) Options {
	o := Options{
		AgentKey:               key,
		Heartbeat:              200 * time.Millisecond,
		PollWait:               25 * time.Second,
		DefaultTimeout:         30 * time.Second,
		MinTimeout:             100 * time.Millisecond,
		MaxTimeout:             15 * time.Minute,
		ApprovalTimeout:        15 * time.Minute,
		SessionGrace:           2 * time.Minute,
		SessionTTL:             24 * time.Hour,
		SweepInterval:          30 * time.Second,
		EventRetention:         24 * time.Hour,
		MaxToolsPerSess:        256,
		MaxMetadataBytes:       4 << 10,
		MaxOpenCallsPerSession: 1000,
		MaxStreamsPerSession:   8,
		Now:                    cfg.Now,
	}
	if cfg.SweepInterval != 0 {
		o.SweepInterval = cfg.SweepInterval
	}
	return o
}

// Open opens the store and the engine.
func Open(ctx context.Context, cfg Config, _ any) (*Server, error) {
	st, err := store.Open(cfg.DBPath, nil)
	if err != nil {
		return nil, err
	}
	key, err := LoadAgentKey(ctx, st, cfg.AgentKey, AgentKeyFile(cfg.DBPath), nil)
	if err != nil {
		st.Close()
		return nil, err
	}
	e, err := New(ctx, testOptions(cfg, key), st, nil)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &Server{Engine: e, Store: st}, nil
}

// Close closes the engine, then the store.
func (s *Server) Close() error {
	s.Engine.Close()
	return s.Store.Close()
}

// startServer opens a test engine; stop (run when the test ends, if not
// before) closes it.
func startServer(t testing.TB, cfg Config) (srv *Server, stop func()) {
	t.Helper()
	srv, err := Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	stop = func() {
		if closed {
			return
		}
		closed = true
		if err := srv.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(stop)
	return srv, stop
}

// serveWithTool opens a test engine (configure may change its Config
// first) with one session offering tool, and returns it and the session's
// id.
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

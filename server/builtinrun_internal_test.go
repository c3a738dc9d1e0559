package server

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
)

// testToolSet is a tool set with one tool, NAME__wait, that runs inside
// the gateway the way an imported MCP server's does: it reports progress,
// then waits for release or for its context to end. The real tool sets
// (package mcpimport) are tested against real MCP servers; this one pins
// what the engine does with any tool set.
type testToolSet struct {
	name string

	mu       sync.Mutex
	online   bool
	watchers []func()

	started  chan struct{} // a call started executing
	release  chan struct{} // ends an execution with "done"
	finished chan error    // each execution's end: nil, or its ctx's error
}

func newTestToolSet(name string) *testToolSet {
	return &testToolSet{name: name, started: make(chan struct{}, 4), release: make(chan struct{}), finished: make(chan error, 4)}
}

func (s *testToolSet) Prefix() string { return s.name + "__" }
func (s *testToolSet) Source() toolgate.ToolSource {
	return toolgate.ToolSource{Kind: toolgate.SourceMCP, Server: s.name}
}
func (s *testToolSet) Tools() []toolgate.Tool { return []toolgate.Tool{&testSetTool{set: s}} }
func (s *testToolSet) Online() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.online
}
func (s *testToolSet) Watch(fn func()) {
	s.mu.Lock()
	s.watchers = append(s.watchers, fn)
	s.mu.Unlock()
}

func (s *testToolSet) setOnline(online bool) {
	s.mu.Lock()
	s.online = online
	watchers := append([]func(){}, s.watchers...)
	s.mu.Unlock()
	for _, fn := range watchers {
		fn()
	}
}

// testSetTool is the set's one tool.
type testSetTool struct{ set *testToolSet }

func (t *testSetTool) Name() string        { return t.set.name + "__wait" }
func (t *testSetTool) Description() string { return "waits for the test to release it" }
func (t *testSetTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
}
func (t *testSetTool) Unavailable() error {
	if t.set.Online() {
		return nil
	}
	return toolgate.Errorf(toolgate.EToolOffline, "the MCP server %s is not connected", t.set.name)
}
func (t *testSetTool) Execute(ctx context.Context, args json.RawMessage) (toolgate.Result, error) {
	t.set.started <- struct{}{}
	toolgate.ReportProgress(ctx, json.RawMessage(`{"step":1,"of":2}`))
	select {
	case <-t.set.release:
		t.set.finished <- nil
		return toolgate.Result{Output: json.RawMessage(`"done"`)}, nil
	case <-ctx.Done():
		t.set.finished <- ctx.Err()
		return toolgate.Result{}, ctx.Err()
	}
}

// startWithToolSet starts a gateway with the test tool set "demo" added.
func startWithToolSet(t *testing.T) (*Server, *testToolSet) {
	t.Helper()
	srv, _ := startServer(t, testConfig(t))
	set := newTestToolSet("demo")
	if err := srv.Agent.Registry.AddToolSet(set); err != nil {
		t.Fatal(err)
	}
	return srv, set
}

// TestOfflineToolSetCallFailsFastAndIsNotStored: a call of a tool whose
// server is down is refused at once with TOOL_OFFLINE, and nothing is
// stored, rather than waiting for a deadline.
func TestOfflineToolSetCallFailsFastAndIsNotStored(t *testing.T) {
	srv, _ := startWithToolSet(t)
	ctx := context.Background()
	_, err := srv.Engine.Calls.CreateCall(ctx, toolgate.CallRequest{Tool: "demo__wait", Args: json.RawMessage(`{}`)}, "")
	if toolgate.ErrorCode(err) != toolgate.EToolOffline {
		t.Fatalf("call of an offline tool: %v; want TOOL_OFFLINE", err)
	}
	list, err := srv.Engine.Calls.ListCalls(ctx, toolgate.CallQuery{})
	if err != nil || len(list.Calls) != 0 {
		t.Fatalf("a refused call was stored: %+v %v", list, err)
	}
}

// TestToolSetCallIsStoredReportsProgressAndCompletes: a tool set's call is
// stored like any call (source mcp in the hooks' view), its progress
// reaches those waiting, and its output ends it completed.
func TestToolSetCallIsStoredReportsProgressAndCompletes(t *testing.T) {
	srv, set := startWithToolSet(t)
	set.setOnline(true)
	e := srv.Engine
	ctx := context.Background()
	var seen toolgate.ToolSource
	e.Hooks().OnBeforeCall(func(_ context.Context, c toolgate.CallCheck) error {
		seen = c.Source
		return nil
	})
	call, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{Tool: "demo__wait", Args: json.RawMessage(`{"n":1}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if seen.Kind != toolgate.SourceMCP || seen.Server != "demo" {
		t.Fatalf("the before-call hook saw source %+v; want mcp/demo", seen)
	}
	<-set.started
	progress := make(chan json.RawMessage, 4)
	waited := make(chan *toolgate.Call, 1)
	go func() {
		c, _ := e.Calls.WaitCallProgress(ctx, call.ID, func(p json.RawMessage) { progress <- p })
		waited <- c
	}()
	// The report may have been stored before the wait began: it is on the
	// record either way.
	testwait.Until(t, 5*time.Second, "the progress is on the call record", func() bool {
		c, err := e.Calls.GetCall(ctx, call.ID)
		return err == nil && string(c.Progress) == `{"step":1,"of":2}`
	})
	close(set.release)
	c := <-waited
	if c == nil || c.Status != toolgate.StatusCompleted || string(c.Output) != `"done"` {
		t.Fatalf("the call ended %+v; want completed with \"done\"", c)
	}
	if err := <-set.finished; err != nil {
		t.Fatalf("the execution ended with %v", err)
	}
}

// TestCancellingAToolSetCallStopsItsExecution: a caller's cancel ends the
// call and the execution's context with it (an MCP server is then told
// notifications/cancelled), instead of leaving it running to its deadline.
func TestCancellingAToolSetCallStopsItsExecution(t *testing.T) {
	srv, set := startWithToolSet(t)
	set.setOnline(true)
	e := srv.Engine
	ctx := context.Background()
	call, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{Tool: "demo__wait", TimeoutMS: 60_000}, "")
	if err != nil {
		t.Fatal(err)
	}
	<-set.started
	ended, err := e.Calls.CancelCall(ctx, call.ID)
	if err != nil || ended.Status != toolgate.StatusCancelled {
		t.Fatalf("cancel: %+v %v", ended, err)
	}
	select {
	case err := <-set.finished:
		if err == nil {
			t.Fatal("the execution finished normally after its call was cancelled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the execution of a cancelled call still runs")
	}
}

package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
)

// toolChanges records what a tool watcher was told.
type toolChanges struct {
	mu   sync.Mutex
	seen []string
}

func (c *toolChanges) add(sid string) {
	c.mu.Lock()
	c.seen = append(c.seen, sid)
	c.mu.Unlock()
}

// take returns what was told since the last take.
func (c *toolChanges) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.seen
	c.seen = nil
	return seen
}

// TestWatchToolsTellsEveryChangeOfASessionsTools: the MCP endpoint keeps
// its listings by these calls, so each way a session's tools can change —
// a registration, a removal, the session becoming unreachable past its
// grace and reachable again, its close — must reach the watchers with the
// session's id, and nothing else may.
func TestWatchToolsTellsEveryChangeOfASessionsTools(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	cfg := testConfig(t)
	cfg.Now = func() time.Time { return time.UnixMilli(now.Load()) }
	cfg.SessionGrace = time.Minute
	cfg.SessionTTL = time.Hour
	srv, _ := startServer(t, cfg)
	e := srv.Engine
	ctx := context.Background()

	changes := &toolChanges{}
	stop := e.Tools.WatchTools(changes.add)
	sid := newSessionWithTool(t, e, toolgate.ToolSpec{Name: "lamp", Description: "a lamp"})
	if got := changes.take(); len(got) != 1 || got[0] != sid {
		t.Fatalf("after a registration, watchers were told %v; want [%s]", got, sid)
	}
	// A registration that registers nothing changes nothing.
	if _, err := e.Tools.RegisterTools(ctx, sid, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{{Name: "bad name"}}}); err != nil {
		t.Fatal(err)
	}
	if got := changes.take(); len(got) != 0 {
		t.Fatalf("a registration of nothing told %v", got)
	}

	// Reachability is looked at by the sweep: within grace nothing flips;
	// past it the session's tools go offline; a stream brings them back.
	e.Sessions.Sweep(ctx)
	if got := changes.take(); len(got) != 0 {
		t.Fatalf("a sweep within grace told %v", got)
	}
	now.Add((2 * time.Minute).Milliseconds())
	e.Sessions.Sweep(ctx)
	if got := changes.take(); len(got) != 1 || got[0] != sid {
		t.Fatalf("a sweep past grace told %v; want [%s]", got, sid)
	}
	tools, _ := e.Tools.ListTools(ctx, sid)
	if len(tools) != 1 || tools[0].Online {
		t.Fatalf("past grace the tool should be listed offline: %+v", tools)
	}
	e.Sessions.Sweep(ctx)
	if got := changes.take(); len(got) != 0 {
		t.Fatalf("a second sweep past grace told %v again", got)
	}
	l, err := e.Delivery.Listen(sid, toolgate.Via{Transport: toolgate.TransportStream, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := changes.take(); len(got) != 1 || got[0] != sid {
		t.Fatalf("a stream opening after grace told %v; want [%s]", got, sid)
	}
	l.Close()

	if err := e.Tools.RemoveTool(ctx, sid, "lamp"); err != nil {
		t.Fatal(err)
	}
	if got := changes.take(); len(got) != 1 || got[0] != sid {
		t.Fatalf("after a removal, watchers were told %v", got)
	}
	if err := e.Sessions.CloseSession(ctx, sid); err != nil {
		t.Fatal(err)
	}
	if got := changes.take(); len(got) != 1 || got[0] != sid {
		t.Fatalf("after the close, watchers were told %v", got)
	}

	stop()
	newSessionWithTool(t, e, toolgate.ToolSpec{Name: "lamp", Description: "a lamp"})
	if got := changes.take(); len(got) != 0 {
		t.Fatalf("a stopped watch was told %v", got)
	}
}

// TestWatchToolsTellsAToolSetsChange: an imported server's tools coming or
// going reach the watchers as "" (the gateway's own tools).
func TestWatchToolsTellsAToolSetsChange(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	set := newTestToolSet("demo")
	if err := srv.Agent.Registry.AddToolSet(set); err != nil {
		t.Fatal(err)
	}
	changes := &toolChanges{}
	srv.Engine.Tools.WatchTools(changes.add)
	set.setOnline(true)
	if got := changes.take(); len(got) != 1 || got[0] != "" {
		t.Fatalf("a tool set going online told %v; want [\"\"]", got)
	}
	var names []string
	for _, info := range srv.Engine.Tools.GatewayTools() {
		names = append(names, info.Name+"/"+info.Source.Kind+"/"+info.Source.Server)
	}
	want := []string{"call_history/builtin/", "current_time/builtin/", "demo__wait/mcp/demo", "http_request/builtin/", "memory_read/builtin/", "memory_search/builtin/", "memory_write/builtin/"}
	if len(names) != len(want) {
		t.Fatalf("gateway tools %v; want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("gateway tools %v; want %v", names, want)
		}
	}
}

// TestToolsLeaveWhenGraceRunsOutNotAtTheNextSweep: when a session's last
// stream closes (a tab went away), its tools go offline as soon as its
// grace has run out, without waiting for the sweep (30 s by default), so
// an MCP host hears list_changed then.
func TestToolsLeaveWhenGraceRunsOutNotAtTheNextSweep(t *testing.T) {
	cfg := testConfig(t)
	cfg.SessionGrace = 300 * time.Millisecond
	cfg.PollWait = 50 * time.Millisecond
	cfg.SweepInterval = time.Hour
	srv, _ := startServer(t, cfg)
	e := srv.Engine
	sid := newSessionWithTool(t, e, toolgate.ToolSpec{Name: "lamp", Description: "a lamp"})
	changes := &toolChanges{}
	e.Tools.WatchTools(changes.add)
	l, err := e.Delivery.Listen(sid, toolgate.Via{Transport: toolgate.TransportStream, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	testwait.Until(t, 10*time.Second, "the watchers are told the session went unreachable", func() bool {
		got := changes.take()
		return len(got) == 1 && got[0] == sid
	})
	tools, _ := e.Tools.ListTools(context.Background(), sid)
	if len(tools) != 1 || tools[0].Online {
		t.Fatalf("past grace the tool should be listed offline: %+v", tools)
	}
}

package server_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pgtest"
	"github.com/toolgate/toolgate/server"
)

// Several gateways in one test process on one PostgreSQL database, each
// with its own engine and store: the in-process half of issue 15's proof
// (internal/multinode runs real processes and kills them).

// postgres is the PostgreSQL server the package's tests share, started by
// the first test that needs it (skipped where it is not installed).
var postgres pgtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	postgres.Stop()
	os.Exit(code)
}

// clusterNodes starts n gateways on one fresh PostgreSQL database; the
// server itself starts with the first test that needs it.
func clusterNodes(t *testing.T, n int, configure func(*server.Config)) []*gateway {
	t.Helper()
	url := postgres.Server(t).NewDatabase(t)
	nodes := make([]*gateway, n)
	for i := range nodes {
		nodes[i] = startGateway(t, func(c *server.Config) {
			c.DBPath = url
			if configure != nil {
				configure(c)
			}
		})
	}
	return nodes
}

// A session created on node 0 is used at once through node 1 (no
// notification needed), its stream is on node 0, a call is created on
// node 1 and answered through node 2, and the caller on node 1 gets the
// answer; progress posted through node 2 reaches node 1 too.
func TestNodesShareSessionsCallsAndAnswers(t *testing.T) {
	nodes := clusterNodes(t, 3, nil)
	a, b, c := nodes[0], nodes[1], nodes[2]
	s := a.newSession("tab")
	b.register(s, echoTool) // registered through another node than the one that created it
	st := a.openStream(s, "")

	call := b.startCall(s, "echo", map[string]any{"text": "hi"}, 10000)
	ev := st.next()
	for ev.Event != "tool_call_request" {
		ev = st.next()
	}
	if ev.Data["id"] != call.ID {
		t.Fatalf("the stream on node 0 got %v, want the request of call %s made on node 1", ev.Data, call.ID)
	}
	done := make(chan callRecord, 1)
	go func() { done <- b.waitCall(call.ID) }()
	time.Sleep(100 * time.Millisecond) // the caller waits on node 1 before the answer
	if status, reply := c.answer(s, call.ID, "hello"); status != 200 {
		t.Fatalf("answer through node 2: %d %v", status, reply)
	}
	select {
	case rec := <-done:
		if rec.Status != "completed" || string(rec.Output) != `"hello"` {
			t.Fatalf("the caller on node 1 got %+v, want completed with \"hello\"", rec)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the caller waiting on node 1 was not woken by the answer posted to node 2")
	}
	// A second answer through yet another node is a duplicate, not a second win.
	if status, reply := a.answer(s, call.ID, "again"); status != 200 || reply["duplicate"] != true {
		t.Fatalf("second answer through node 0: %d %v, want a duplicate", status, reply)
	}
	if rec := c.waitCall(call.ID); string(rec.Output) != `"hello"` {
		t.Fatalf("stored output %s, want the first answer's", rec.Output)
	}
}

// Closing a session through one node ends its stream on another.
func TestClosingOnOneNodeEndsTheStreamOnAnother(t *testing.T) {
	nodes := clusterNodes(t, 2, nil)
	s := nodes[0].newSession("tab")
	st := nodes[0].openStream(s, "")
	nodes[1].call("DELETE", "/v1/sessions/"+s.ID, s.Token, nil, 200, nil)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-st.events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream on node 0 outlived its session, closed through node 1, by 10 s")
		}
	}
}

// The sweep runs on one node at a time: a call whose deadline passes ends
// timed_out once, whichever node sweeps, and every node reports it so.
func TestOneSweeperEndsOverdueCalls(t *testing.T) {
	nodes := clusterNodes(t, 3, func(c *server.Config) { c.SweepInterval = 100 * time.Millisecond })
	s := nodes[0].newSession("tab")
	nodes[0].register(s, echoTool)
	call := nodes[1].startCall(s, "echo", map[string]any{"text": "late"}, 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if rec := nodes[2].waitCall(call.ID); rec.Status == "timed_out" {
			return
		}
	}
	t.Fatal("a call past its deadline did not end timed_out within 10 s")
}

// The bound on a session's open calls holds across nodes: two calls made
// through node 0 fill it, and a third through node 1 is refused.
func TestOpenCallBoundHoldsAcrossNodes(t *testing.T) {
	nodes := clusterNodes(t, 2, func(c *server.Config) { c.MaxOpenCallsPerSession = 2 })
	s := nodes[0].newSession("tab")
	nodes[0].register(s, echoTool)
	nodes[0].startCall(s, "echo", map[string]any{"text": "1"}, 10000)
	nodes[0].startCall(s, "echo", map[string]any{"text": "2"}, 10000)
	status, body := nodes[1].do("POST", "/v1/calls", testAgentKey,
		map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "3"}, "wait": false})
	if status != 429 || !strings.Contains(string(body), "RATE_LIMITED") {
		t.Fatalf("a third open call through another node: %d %s, want 429 RATE_LIMITED", status, body)
	}
}

// What one node just changed holds on the next request to another, before
// any notification could arrive: a tool removed, a session closed.
func TestChangesHoldAtOnceOnAnotherNode(t *testing.T) {
	nodes := clusterNodes(t, 2, nil)
	s := nodes[0].newSession("tab")
	for i := range 20 {
		name := fmt.Sprintf("tool%d", i)
		tool := map[string]any{"name": name, "description": "a tool", "parameters": map[string]any{"type": "object"}}
		nodes[0].register(s, tool)
		nodes[1].startCall(s, name, map[string]any{}, 10000) // node 1 hears of it, one way or another
		nodes[0].call("DELETE", "/v1/sessions/"+s.ID+"/tools/"+name, s.Token, nil, 200, nil)
		status, body := nodes[1].do("POST", "/v1/calls", testAgentKey,
			map[string]any{"session_id": s.ID, "tool": name, "args": map[string]any{}, "wait": false})
		if status != 404 || !strings.Contains(string(body), "TOOL_NOT_FOUND") {
			t.Fatalf("round %d: a call through node 1 to a tool just removed through node 0: %d %s, want 404 TOOL_NOT_FOUND", i, status, body)
		}
	}
	nodes[0].call("DELETE", "/v1/sessions/"+s.ID, s.Token, nil, 200, nil)
	status, body := nodes[1].do("POST", "/v1/calls", testAgentKey,
		map[string]any{"session_id": s.ID, "tool": "tool0", "args": map[string]any{}, "wait": false})
	if status != 404 || !strings.Contains(string(body), "NOT_FOUND") {
		t.Fatalf("a call through node 1 to a session just closed through node 0: %d %s, want 404", status, body)
	}
}

// Registrations of one session made at once through two nodes cannot
// together pass the cap on its tools.
func TestToolCapHoldsAcrossNodes(t *testing.T) {
	nodes := clusterNodes(t, 2, func(c *server.Config) { c.MaxToolsPerSess = 10 })
	batch := func(prefix string) []any {
		var tools []any
		for i := range 8 {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("%s%d", prefix, i), "description": "a tool",
				"parameters": map[string]any{"type": "object"}})
		}
		return tools
	}
	for round := range 10 {
		s := nodes[0].newSession("tab")
		nodes[1].call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, nil) // both nodes know it, empty
		var wg sync.WaitGroup
		for i, g := range nodes {
			wg.Go(func() {
				g.do("POST", "/v1/sessions/"+s.ID+"/tools", s.Token,
					map[string]any{"type": "register_tools", "tools": batch(fmt.Sprintf("n%d_", i))})
			})
		}
		wg.Wait()
		var view struct {
			Tools []any `json:"tools"`
		}
		nodes[1].call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
		if len(view.Tools) > 10 {
			t.Fatalf("round %d: the session holds %d tools, over the cap of 10", round, len(view.Tools))
		}
	}
}

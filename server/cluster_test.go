package server_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pgtest"
	"github.com/toolgate/toolgate/server"
)

// Several gateways in one test process on one PostgreSQL database, each
// with its own engine and store: the in-process half of issue 15's proof
// (internal/multinode runs real processes and kills them).

var (
	postgresOnce sync.Once
	postgres     *pgtest.Server
	postgresErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if postgres != nil {
		postgres.Stop()
	}
	os.Exit(code)
}

// clusterNodes starts n gateways on one fresh PostgreSQL database; the
// server itself starts with the first test that needs it.
func clusterNodes(t *testing.T, n int, configure func(*server.Config)) []*gateway {
	t.Helper()
	postgresOnce.Do(func() { postgres, postgresErr = pgtest.Start(pgtest.Options{}) })
	if postgresErr != nil {
		t.Fatal(postgresErr)
	}
	url := postgres.NewDatabase(t)
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
	nodes[1].call("DELETE", "/v1/sessions/"+s.ID, s.Token, nil, 204, nil)
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

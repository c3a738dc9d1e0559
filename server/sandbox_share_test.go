package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestSessionRunCannotStarveTheAgentsSandboxCalls: a run a session's
// token started, whose model asks for eight spinning sandboxed calls at
// once, holds only its session's share of the sandbox's room (the engine
// runs its calls on behalf of that session): the agent key's own
// sandboxed call, made meanwhile, runs at once and completes.
func TestSessionRunCannotStarveTheAgentsSandboxCalls(t *testing.T) {
	var spins []chatToolCall
	for i := range 8 {
		spins = append(spins, callTool(fmt.Sprintf("s%d", i), "spin", `{}`))
	}
	m := startFakeModel(t, toolThenAnswer(spins...))
	g, _ := sandboxGateway(t, m, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "spin", `{"description": "spins", "parameters": {"type": "object"}, "timeout_ms": 20000}`)
		sandboxtest.Install(t, dir, "echo", "shout", sandboxSpec)
	})
	s := g.newSession("anonymous")
	var run runRecord
	g.call("POST", "/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "spin", "wait": false}, 202, &run)
	deadline := time.Now().Add(20 * time.Second)
	for len(g.callsOf("spin")) < len(spins) {
		if time.Now().After(deadline) {
			t.Fatalf("the run dispatched %d of its %d spinning calls", len(g.callsOf("spin")), len(spins))
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rec callRecord
	started := time.Now()
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "shout", "args": map[string]any{"text": "hi"}, "timeout_ms": 8000}, 200, &rec)
	if rec.Status != "completed" {
		t.Fatalf("the agent key's sandboxed call beside a session's eight spinning ones: %+v (after %s)", rec, time.Since(started))
	}
}

package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
)

// TestRunProgressAndSessionClose: a client's progress report shows as a
// tool_call_progress run event; when the session closes while a run waits
// on it, the call ends cancelled, the model is told, and its next turn is
// shown only the built-in tools (the session's tools are gone).
func TestRunProgressAndSessionClose(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "echo", `{"text":"long job"}`)))
	g := modelGateway(t, m, nil)
	s := g.newSession("laptop")
	g.register(s, echoTool)
	client := g.openStream(s, "")

	run := g.runStream("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "start the job"})
	req := client.nextOfType("tool_call_request")
	callID := req.Data["id"].(string)
	run.untilRunEvent("tool_call_started")
	g.call("POST", "/v1/sessions/"+s.ID+"/progress", s.Token, map[string]any{
		"type": "tool_progress", "id": callID, "progress": map[string]any{"current": 1, "total": 4, "message": "copying"},
	}, 200, nil)
	seen := run.untilRunEvent("tool_call_progress")
	progress := seen[len(seen)-1]
	if progress.Data["call_id"] != callID || progress.Data["progress"].(map[string]any)["message"] != "copying" {
		t.Fatalf("tool_call_progress = %s", progress.Raw)
	}

	g.call("POST", "/v1/sessions/"+s.ID+"/close", s.Token, nil, 200, nil)
	seen = run.untilRunEvent("run_finished")
	var finished sseEvent
	for _, ev := range seen {
		if ev.Event == "tool_call_finished" {
			finished = ev
		}
	}
	if finished.Data["status"] != "cancelled" || finished.Data["error"].(map[string]any)["code"] != "CANCELLED" {
		t.Fatalf("tool_call_finished = %s", finished.Raw)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !strings.Contains(lastMessage(reqs[1]).Text(), `"code":"CANCELLED"`) {
		t.Fatalf("model requests = %+v", reqs)
	}
	var names []string
	for _, tool := range reqs[1].Tools {
		names = append(names, tool.Function.Name)
	}
	if strings.Join(names, ",") != "call_history,current_time,http_request,memory_read,memory_search,memory_write" {
		t.Fatalf("tools after the session closed = %v", names)
	}
}

// TestEmbedderBuiltin: an embedder adds a built-in tool with traits; its
// approval requirement and rate limit apply to direct calls (counted for
// calls without a session), and an approved call runs inside the gateway.
func TestEmbedderBuiltin(t *testing.T) {
	g := startGateway(t, nil)
	type rebootArgs struct {
		Host string `json:"host" jsonschema:"description=host to reboot"`
	}
	ran := make(chan string, 4)
	tool := agentloop.NewFuncTool("reboot", "Reboot a host", func(_ context.Context, a rebootArgs) (any, error) {
		if a.Host == "" {
			return nil, toolgate.Errorf(toolgate.EInvalidArgs, "host is required")
		}
		ran <- a.Host
		return map[string]string{"rebooted": a.Host}, nil
	})
	tool.Approval = toolgate.ApprovalAlways
	tool.Limit = &toolgate.RateLimit{RequestsPerMinute: 2}
	if err := g.Server.Agent.Registry.AddBuiltin(tool); err != nil {
		t.Fatal(err)
	}
	if err := g.Server.Agent.Registry.AddBuiltin(tool); err == nil {
		t.Fatal("the same built-in was added twice")
	}

	var first callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "reboot", "args": map[string]any{"host": "db1"}, "wait": false}, 202, &first)
	if first.Status != "awaiting_approval" {
		t.Fatalf("first = %+v", first)
	}
	select {
	case host := <-ran:
		t.Fatalf("%s rebooted before approval", host)
	default:
	}
	g.call("POST", "/v1/calls/"+first.ID+"/approve", testAgentKey, nil, 200, nil)
	if got := g.waitCall(first.ID); got.Status != "completed" || string(got.Output) != `{"rebooted":"db1"}` {
		t.Fatalf("approved call = %+v %s", got, got.Output)
	}
	if host := <-ran; host != "db1" {
		t.Fatalf("ran for %s", host)
	}

	if second := g.startCallBuiltin(t, "reboot", map[string]any{"host": "db2"}, 202); second.Status != "awaiting_approval" {
		t.Fatalf("second = %+v", second)
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "reboot", "args": map[string]any{"host": "db3"}, "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" {
		t.Fatalf("third reboot within a minute: %d %s", status, body)
	}
	if len(ran) != 0 {
		t.Fatalf("a call ran without approval")
	}
	var stored int
	if err := g.db(t).Get(&stored, `SELECT COUNT(*) FROM calls WHERE tool = 'reboot' AND session_id IS NULL`); err != nil || stored != 2 {
		t.Fatalf("reboot calls stored = %d (%v), want 2", stored, err)
	}
}

// startCallBuiltin starts a call of a built-in tool without waiting.
func (g *gateway) startCallBuiltin(t *testing.T, tool string, args any, want int) callRecord {
	t.Helper()
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": tool, "args": args, "wait": false}, want, &rec)
	return rec
}

// TestSessionRunSeesOwnHistory: in a run a session's token started, the
// call_history tool shows that session's calls only, and refuses to read
// another session's; with the agent key it shows every call.
func TestSessionRunSeesOwnHistory(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(
		callTool("h1", "call_history", `{}`),
		callTool("h2", "call_history", `{"session_id":"SOMEONE_ELSE"}`),
	))
	g := modelGateway(t, m, nil)
	s, other := g.newSession("mine"), g.newSession("theirs")
	g.register(s, echoTool)
	g.register(other, echoTool)
	mine, theirs := g.startCall(s, "echo", map[string]any{"text": "a"}, 0), g.startCall(other, "echo", map[string]any{"text": "b"}, 0)

	var run runRecord
	g.call("POST", "/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "what happened"}, 200, &run)
	if run.Status != "finished" || !strings.Contains(run.Output, mine.ID) || strings.Contains(run.Output, theirs.ID) ||
		!strings.Contains(run.Output, `"code":"PERMISSION_DENIED"`) {
		t.Fatalf("session run output = %s", run.Output)
	}
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "what happened"}, 200, &run)
	if !strings.Contains(run.Output, mine.ID) || !strings.Contains(run.Output, theirs.ID) {
		t.Fatalf("agent run output = %s", run.Output)
	}
}

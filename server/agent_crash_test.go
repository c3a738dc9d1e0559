package server_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// startModelBinary runs the real binary pointed at the fake model.
func startModelBinary(t *testing.T, m *fakeModel) (*gatewaytest.Gateway, *gateway) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proc := gatewaytest.Start(t, "--agent-key", testAgentKey, "--heartbeat", "500ms", "--llm-base-url", m.URL, "--llm-model", "fake-model")
	return proc, &gateway{t: t, URL: proc.URL, DBPath: proc.DBPath}
}

// TestRunSurvivesKill kills the gateway (SIGKILL) while a run waits on a
// client's answer, starts it again on the same database, and lets the
// client answer after reconnecting: the run goes on from its stored step
// and finishes, and the model is asked exactly twice in all — never again
// for the turn it had already taken.
func TestRunSurvivesKill(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "echo", `{"text":"before the crash"}`)))
	proc, g := startModelBinary(t, m)
	s := g.newSession("survivor")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")

	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "echo it", "wait": false}, 202, &run)
	if run.Status != "running" {
		t.Fatalf("run = %+v", run)
	}
	req := client.nextOfType("tool_call_request")
	callID := req.Data["id"].(string)

	proc.Kill()
	client.Close()
	proc.Restart(t)

	follow := g.followRun(run.ID)
	follow.untilRunEvent("run_started")
	client = g.openStream(s, req.ID)
	client.nextOfType("ready")
	again := client.nextOfType("tool_call_request")
	if again.Data["id"] != callID {
		t.Fatalf("redelivered %s, want %s", again.Raw, callID)
	}
	if status, reply := g.answer(s, callID, "echoed after the crash"); status != 200 || reply["duplicate"] != nil {
		t.Fatalf("answer: %d %v", status, reply)
	}
	follow.untilRunEvent("run_finished")

	stored := g.getRun(run.ID)
	if stored.Status != "finished" || stored.Output != "done: echoed after the crash" || stored.Steps != 2 || len(stored.Messages) != 4 {
		t.Fatalf("run after restart = %+v", stored)
	}
	if len(stored.Calls) != 1 || stored.Calls[0].ID != callID {
		t.Fatalf("the step's call was made again: %+v", stored.Calls)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want 2", len(reqs))
	}
	if msgs := reqs[1].Messages; len(msgs) != 3 || msgs[1].ToolCalls[0].ID != "c1" || msgs[2].Text() != "echoed after the crash" {
		t.Fatalf("second request = %+v", msgs)
	}
}

// TestApprovalAndRateLimitSurviveRestart: a call awaiting approval is still
// awaiting after a kill and restart, can be approved then, and its run
// finishes; a tool's rate limit still holds after the restart, because it
// is counted from stored calls.
func TestApprovalAndRateLimitSurviveRestart(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "delete_photos", `{"album":"2019"}`)))
	proc, g := startModelBinary(t, m)
	s := g.newSession("phone")
	g.register(s, guardedTool, limitedTool)

	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "tidy up", "wait": false}, 202, &run)
	seen := g.followRun(run.ID).untilRunEvent("approval_needed")
	callID := seen[len(seen)-1].Data["call_id"].(string)
	g.startCall(s, "send_sms", nil, 0)
	g.startCall(s, "send_sms", nil, 0)

	proc.Kill()
	proc.Restart(t)

	if awaiting := g.awaitingCalls(); len(awaiting) != 1 || awaiting[0].ID != callID {
		t.Fatalf("awaiting approval after restart = %+v", awaiting)
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "send_sms", "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" {
		t.Fatalf("rate limit after restart: %d %s", status, body)
	}

	follow := g.followRun(run.ID)
	follow.untilRunEvent("run_started")
	client := g.openStream(s, "")
	g.call("POST", "/v1/calls/"+callID+"/approve", testAgentKey, nil, 200, nil)
	// The two open send_sms calls come first (open calls, oldest first), then the approved one.
	for {
		req := client.nextOfType("tool_call_request")
		if req.Data["id"] == callID {
			break
		}
		if req.Data["name"] != "send_sms" {
			t.Fatalf("unexpected request %s", req.Raw)
		}
	}
	g.answer(s, callID, "2019 album deleted")
	follow.untilRunEvent("run_finished")
	if got := g.getRun(run.ID); got.Output != "done: 2019 album deleted" || len(m.Requests()) != 2 {
		t.Fatalf("run = %+v, model asked %d times", got, len(m.Requests()))
	}
}

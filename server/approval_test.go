package server_test

import (
	"strings"
	"testing"
)

// guardedTool needs a person's approval for every call.
var guardedTool = map[string]any{
	"name": "delete_photos", "description": "Delete the user's photos", "requires_approval": "always",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"album": map[string]any{"type": "string"}}},
}

// pollEvents reads the session's events after cursor 0 without waiting.
func (g *gateway) pollEvents(s session) []map[string]any {
	g.t.Helper()
	var poll struct {
		Events []map[string]any `json:"events"`
	}
	g.call("GET", "/v1/sessions/"+s.ID+"/poll?cursor=0&wait_ms=0", s.Token, nil, 200, &poll)
	return poll.Events
}

// awaitingCalls lists the calls awaiting approval.
func (g *gateway) awaitingCalls() []callRecord {
	g.t.Helper()
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls?status=awaiting_approval", testAgentKey, nil, 200, &list)
	return list.Calls
}

// TestApprovalApprove: a run's call to a tool that needs approval waits as
// awaiting_approval, shows as approval_needed and in the history filter,
// sends nothing to the client; another session cannot approve it; the
// session that started the run can, and then the client gets the call and
// the run finishes.
func TestApprovalApprove(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "delete_photos", `{"album":"old"}`)))
	g := modelGateway(t, m, nil)
	s, stranger := g.newSession("phone"), g.newSession("stranger")
	g.register(s, guardedTool)

	run := g.runStream("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "clean up"})
	seen := run.untilRunEvent("approval_needed")
	needed := seen[len(seen)-1]
	callID, _ := needed.Data["call_id"].(string)
	if callID == "" || needed.Data["tool"] != "delete_photos" || needed.Data["tool_call_id"] != "c1" {
		t.Fatalf("approval_needed = %s", needed.Raw)
	}
	awaiting := g.awaitingCalls()
	if len(awaiting) != 1 || awaiting[0].ID != callID {
		t.Fatalf("awaiting approval = %+v", awaiting)
	}
	if events := g.pollEvents(s); len(events) != 0 {
		t.Fatalf("the client was sent %v before approval", events)
	}

	for _, c := range []struct {
		secret string
		status int
		code   string
	}{
		{"", 401, "UNAUTHENTICATED"},
		{"tgs_forged", 401, "UNAUTHENTICATED"},
		{stranger.Token, 403, "PERMISSION_DENIED"},
	} {
		status, body := g.do("POST", "/v1/calls/"+callID+"/approve", c.secret, nil)
		if status != c.status || errorCode(body) != c.code {
			t.Fatalf("approve with %q: %d %s", c.secret, status, body)
		}
	}
	if got := g.waitCallNow(callID); got.Status != "awaiting_approval" {
		t.Fatalf("after refused approvals: %+v", got)
	}

	client := g.openStream(s, "")
	var approved callRecord
	g.call("POST", "/v1/calls/"+callID+"/approve", s.Token, nil, 200, &approved)
	if approved.Status != "pending" {
		t.Fatalf("approved = %+v", approved)
	}
	req := client.nextOfType("tool_call_request")
	if req.Data["id"] != callID {
		t.Fatalf("request after approval = %s", req.Raw)
	}
	g.answer(s, callID, "3 photos deleted")
	end := run.untilRunEvent("run_finished")
	if out := end[len(end)-1].Data["run"].(map[string]any)["output"]; out != "done: 3 photos deleted" {
		t.Fatalf("output = %v", out)
	}
	status, body := g.do("POST", "/v1/calls/"+callID+"/approve", testAgentKey, nil)
	if status != 409 || errorCode(body) != "CALL_CLOSED" {
		t.Fatalf("approve an ended call: %d %s", status, body)
	}

	// The session reads its run with its own token; no other session can.
	runID := needed.Data["run_id"].(string)
	var own runRecord
	g.call("GET", "/v1/sessions/"+s.ID+"/runs/"+runID, s.Token, nil, 200, &own)
	if own.Status != "finished" || len(own.Calls) != 1 {
		t.Fatalf("the session's view of its run = %+v", own)
	}
	status, body = g.do("GET", "/v1/sessions/"+stranger.ID+"/runs/"+runID, stranger.Token, nil)
	if status != 404 || errorCode(body) != "NOT_FOUND" {
		t.Fatalf("another session reading the run: %d %s", status, body)
	}
	status, _ = g.do("GET", "/v1/sessions/"+s.ID+"/runs/"+runID, stranger.Token, nil)
	if status != 401 && status != 403 {
		t.Fatalf("another session's token on this session's path: %d", status)
	}
}

// TestApprovalDeny: a denied call ends denied with the reason, the client
// never sees it, and the model is told; deny and approve of calls that do
// not await approval are refused and change nothing.
func TestApprovalDeny(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "delete_photos", `{"album":"all"}`)))
	g := modelGateway(t, m, nil)
	s := g.newSession("phone")
	g.register(s, guardedTool, echoTool)

	run := g.runStream("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "delete everything"})
	seen := run.untilRunEvent("approval_needed")
	callID := seen[len(seen)-1].Data["call_id"].(string)

	status, body := g.do("POST", "/v1/calls/"+callID+"/deny", testAgentKey, `{"reason": 7}`)
	if status != 400 {
		t.Fatalf("deny with a bad body: %d %s", status, body)
	}
	// A session that did not start the run (this run was started with the agent key).
	status, body = g.do("POST", "/v1/calls/"+callID+"/deny", s.Token, nil)
	if status != 403 || errorCode(body) != "PERMISSION_DENIED" {
		t.Fatalf("deny by the session of an agent-started run: %d %s", status, body)
	}
	var denied callRecord
	g.call("POST", "/v1/calls/"+callID+"/deny", testAgentKey, map[string]any{"reason": "not without a backup"}, 200, &denied)
	if denied.Status != "denied" || denied.Error == nil || denied.Error.Code != "DENIED" || !strings.Contains(denied.Error.Message, "not without a backup") {
		t.Fatalf("denied = %+v", denied)
	}
	end := run.untilRunEvent("run_finished")
	out := end[len(end)-1].Data["run"].(map[string]any)["output"].(string)
	if !strings.Contains(out, `"code":"DENIED"`) || !strings.Contains(out, "not without a backup") {
		t.Fatalf("the model was told: %s", out)
	}
	if events := g.pollEvents(s); len(events) != 0 {
		t.Fatalf("the client was sent %v for a denied call", events)
	}
	status, body = g.do("POST", "/v1/calls/"+callID+"/approve", testAgentKey, nil)
	if status != 409 || errorCode(body) != "CALL_CLOSED" {
		t.Fatalf("approve a denied call: %d %s", status, body)
	}

	// A call that never needed approval cannot be approved or denied.
	plain := g.startCall(s, "echo", map[string]any{"text": "x"}, 0)
	for _, action := range []string{"approve", "deny"} {
		status, body := g.do("POST", "/v1/calls/"+plain.ID+"/"+action, testAgentKey, nil)
		if status != 409 || errorCode(body) != "CONFLICT" {
			t.Fatalf("%s a pending call: %d %s", action, status, body)
		}
	}
	status, body = g.do("POST", "/v1/calls/nope/approve", testAgentKey, nil)
	if status != 404 || errorCode(body) != "NOT_FOUND" {
		t.Fatalf("approve an unknown call: %d %s", status, body)
	}
}

// TestAutoApprove: unless_auto_approved waits for approval until the
// session turns auto-approve on; then its calls go out at once, while
// "always" still waits. Direct calls through POST /v1/calls follow the same
// rules.
func TestAutoApprove(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("desk")
	g.register(s, guardedTool, map[string]any{"name": "open_url", "description": "Open a URL", "requires_approval": "unless_auto_approved"})

	if c := g.startCall(s, "open_url", nil, 0); c.Status != "awaiting_approval" {
		t.Fatalf("before auto-approve: %+v", c)
	}
	status, body := g.do("POST", "/v1/sessions/"+s.ID+"/settings", s.Token, map[string]any{"auto_approve": "yes"})
	if status != 400 {
		t.Fatalf("bad setting: %d %s", status, body)
	}
	status, body = g.do("POST", "/v1/sessions/"+s.ID+"/settings", s.Token, map[string]any{})
	if status != 400 {
		t.Fatalf("empty setting: %d %s", status, body)
	}
	var view struct {
		AutoApprove bool `json:"auto_approve"`
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/settings", s.Token, map[string]any{"auto_approve": true}, 200, &view)
	if !view.AutoApprove {
		t.Fatalf("view = %+v", view)
	}
	if c := g.startCall(s, "open_url", nil, 0); c.Status != "pending" {
		t.Fatalf("with auto-approve: %+v", c)
	}
	if c := g.startCall(s, "delete_photos", nil, 0); c.Status != "awaiting_approval" {
		t.Fatalf("always, with auto-approve: %+v", c)
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/settings", testAgentKey, map[string]any{"auto_approve": false}, 200, &view)
	if c := g.startCall(s, "open_url", nil, 0); view.AutoApprove || c.Status != "awaiting_approval" {
		t.Fatalf("after turning it off: %+v %+v", view, c)
	}
}

// waitCallNow reads a call's record without waiting.
func (g *gateway) waitCallNow(id string) callRecord {
	g.t.Helper()
	var rec callRecord
	g.call("GET", "/v1/calls/"+id, testAgentKey, nil, 200, &rec)
	return rec
}

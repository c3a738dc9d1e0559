package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestOperatorToolApprovalNeedsAgentKey: a run started with a session's
// token calls the operator's gated tools, a sandboxed one and a built-in
// one, each requiring approval always. The session's token may neither
// approve nor deny them (403 PERMISSION_DENIED, the call still awaits);
// the agent key may. Before, the session approved the operator's gate
// itself and the tool ran.
func TestOperatorToolApprovalNeedsAgentKey(t *testing.T) {
	m := startFakeModel(t, func(req chatRequest) modelTurn {
		last := lastMessage(req)
		switch {
		case last.Role == "tool":
			return modelTurn{Content: "done: " + last.Text()}
		case strings.Contains(last.Text(), "shout"):
			return modelTurn{ToolCalls: []chatToolCall{callTool("c1", "shout", `{"text": "gated"}`)}}
		default:
			return modelTurn{ToolCalls: []chatToolCall{callTool("c2", "wipe_disk", `{}`)}}
		}
	})
	g, _ := sandboxGateway(t, m, func(dir string) {
		sandboxtest.Install(t, dir, "echo", "shout",
			`{"description": "a gated sandboxed tool", "parameters": {"type": "object"}, "requires_approval": "always"}`)
	})
	wiped := 0
	wipe := agentloop.NewFuncTool("wipe_disk", "Wipes the operator's disk", func(context.Context, struct{}) (any, error) {
		wiped++
		return "wiped", nil
	})
	wipe.Approval = toolgate.ApprovalAlways
	if err := g.Server.Agent.Registry.AddBuiltin(wipe); err != nil {
		t.Fatal(err)
	}
	s := g.newSession("anonymous")

	// awaiting starts a run with the session's token and returns the call
	// it waits on, after the session's own decisions were refused.
	awaiting := func(input, tool string) (*stream, string) {
		t.Helper()
		run := g.runStream("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": input})
		seen := run.untilRunEvent("approval_needed")
		needed := seen[len(seen)-1]
		callID, _ := needed.Data["call_id"].(string)
		if callID == "" || needed.Data["tool"] != tool {
			t.Fatalf("approval_needed = %s", needed.Raw)
		}
		for _, decision := range []string{"approve", "deny"} {
			status, body := g.do("POST", "/v1/calls/"+callID+"/"+decision, s.Token, map[string]any{})
			if status != 403 || errorCode(body) != "PERMISSION_DENIED" || !strings.Contains(string(body), "only the agent key") {
				t.Fatalf("%s %s with the session's token: %d %s; want 403 PERMISSION_DENIED", decision, tool, status, body)
			}
		}
		if got := g.waitCallNow(callID); got.Status != "awaiting_approval" {
			t.Fatalf("%s after the session's refused decisions: %+v", tool, got)
		}
		return run, callID
	}

	run, callID := awaiting("shout it", "shout")
	var approved callRecord
	g.call("POST", "/v1/calls/"+callID+"/approve", testAgentKey, nil, 200, &approved)
	end := run.untilRunEvent("run_finished")
	if out, _ := end[len(end)-1].Data["run"].(map[string]any)["output"].(string); !strings.Contains(out, "GATED") {
		t.Fatalf("output after the agent key approved the sandboxed call = %q", out)
	}

	run, callID = awaiting("wipe it", "wipe_disk")
	g.call("POST", "/v1/calls/"+callID+"/deny", testAgentKey, map[string]any{"reason": "no"}, 200, nil)
	run.untilRunEvent("run_finished")
	if got := g.waitCallNow(callID); got.Status != "denied" || wiped != 0 {
		t.Fatalf("the built-in call after the agent key denied it: %+v, ran %d times", got, wiped)
	}
}

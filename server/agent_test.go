package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestRunWithRemoteTools drives a run against the fake model with a real
// client session: the model asks for two calls of the client's tool at
// once, both reach the client before it answers either (they run in
// parallel), the answers go back to the model as tool messages, and the
// model's answer ends the run. The events stream in order and the stored
// run has every message and call.
func TestRunWithRemoteTools(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(
		callTool("call_a", "echo", `{"text":"one"}`),
		callTool("call_b", "echo", `{"text":"two"}`),
	))
	g := modelGateway(t, m, nil)
	s := g.newSession("phone")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")

	run := g.runStream("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "say one and two"})
	started := run.next()
	if started.Event != "run_started" {
		t.Fatalf("first event = %s %s", started.Event, started.Raw)
	}
	runID := started.Data["run_id"].(string)

	// Both requests arrive before either is answered.
	first, second := client.nextOfType("tool_call_request"), client.nextOfType("tool_call_request")
	for _, ev := range []sseEvent{first, second} {
		args := ev.Data["args"].(map[string]any)
		if status, _ := g.answer(s, ev.Data["id"].(string), "echoed "+args["text"].(string)); status != 200 {
			t.Fatalf("answer: %d", status)
		}
	}
	events := run.untilRunEvent("run_finished")
	counts := map[string]int{}
	for _, ev := range events {
		counts[ev.Event]++
	}
	if counts["model_message"] != 2 || counts["tool_call_started"] != 2 || counts["tool_call_finished"] != 2 {
		t.Fatalf("event counts = %v", counts)
	}
	final := events[len(events)-1].Data["run"].(map[string]any)
	if final["output"] != "done: echoed one | echoed two" || final["status"] != "finished" {
		t.Fatalf("run_finished = %v", final)
	}

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model asked %d times, want 2", len(reqs))
	}
	var names []string
	for _, tool := range reqs[0].Tools {
		names = append(names, tool.Function.Name)
	}
	if strings.Join(names, ",") != "call_history,current_time,http_request,memory_read,memory_search,memory_write,echo" {
		t.Fatalf("tools shown to the model = %v", names)
	}
	if reqs[0].Model != "fake-model" || reqs[0].Messages[0].Role != "user" || reqs[0].Messages[0].Text() != "say one and two" {
		t.Fatalf("first request = %+v", reqs[0])
	}
	second2 := reqs[1].Messages
	if len(second2) != 4 || second2[1].Role != "assistant" || len(second2[1].ToolCalls) != 2 ||
		second2[2].ToolCallID != "call_a" || second2[3].ToolCallID != "call_b" {
		t.Fatalf("second request messages = %+v", second2)
	}

	stored := g.getRun(runID)
	if stored.Status != "finished" || stored.Steps != 2 || len(stored.Messages) != 5 || len(stored.Calls) != 2 {
		t.Fatalf("stored run = %+v", stored)
	}
	for _, c := range stored.Calls {
		if c.RunID != runID || c.SessionID != s.ID || c.Status != "completed" {
			t.Fatalf("run call = %+v", c)
		}
	}
}

// TestRunToolErrorsReachModel: a client's AUTH_REQUIRED error (with its
// resolution_hint), a tool that does not exist and arguments that are not
// JSON all come back to the model as tool messages with their codes, and
// the run goes on to the model's answer.
func TestRunToolErrorsReachModel(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(
		callTool("c1", "echo", `{"text":"photo"}`),
		callTool("c2", "teleport", `{}`),
		callTool("c3", "echo", `{"text":`),
		callTool("c4", "echo", `{"wrong":1}`),
	))
	g := modelGateway(t, m, nil)
	s := g.newSession("phone")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")

	var run runRecord
	done := make(chan struct{})
	go func() {
		defer close(done)
		decodeResponse(t, mustRequest(t, "POST", g.URL+"/v1/runs", map[string]any{"session_id": s.ID, "input": "take a photo"}), 200, &run)
	}()
	req := client.nextOfType("tool_call_request")
	status, _ := g.do("POST", "/v1/sessions/"+s.ID+"/results", s.Token, map[string]any{
		"type": "tool_error", "id": req.Data["id"], "error": "Camera permission denied", "code": "AUTH_REQUIRED",
		"details": map[string]any{"resolution_hint": "Open Settings > Camera and allow access"},
	})
	if status != 200 {
		t.Fatalf("tool_error: %d", status)
	}
	<-done
	if run.Status != "finished" {
		t.Fatalf("run = %+v", run)
	}
	tools := map[string]string{}
	for _, msg := range m.Requests()[1].Messages {
		if msg.Role == "tool" {
			tools[msg.ToolCallID] = msg.Text()
		}
	}
	want := map[string][]string{
		"c1": {`"code":"AUTH_REQUIRED"`, `"resolution_hint":"Open Settings \u003e Camera and allow access"`, "Camera permission denied"},
		"c2": {`"code":"TOOL_NOT_FOUND"`, "teleport"},
		"c3": {`"code":"INVALID_ARGS"`, "not valid JSON"},
		"c4": {`"code":"INVALID_ARGS"`, "text"},
	}
	for id, parts := range want {
		for _, p := range parts {
			if !strings.Contains(tools[id], p) {
				t.Errorf("tool message %s = %s; want it to contain %s", id, tools[id], p)
			}
		}
	}
	// Only the one valid call was stored and sent.
	if len(run.Calls) != 1 {
		t.Fatalf("calls stored = %+v", run.Calls)
	}
}

// TestRunWithoutModel: with no model configured the runs API says what to
// set, and the rest of the gateway (a built-in call here) serves as usual.
func TestRunWithoutModel(t *testing.T) {
	g := startGateway(t, nil)
	status, body := g.do("POST", "/v1/runs", testAgentKey, map[string]any{"input": "hello"})
	if status != 503 || errorCode(body) != "MODEL_NOT_CONFIGURED" || !strings.Contains(string(body), "--llm-model") ||
		!strings.Contains(string(body), "TOOLGATE_LLM_BASE_URL") {
		t.Fatalf("run without model: %d %s", status, body)
	}
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "current_time", "args": map[string]any{}}, 200, &rec)
	if rec.Status != "completed" {
		t.Fatalf("built-in call = %+v", rec)
	}
}

// TestRunBadInput: bad run requests get a clear 4xx, never reach the
// model, and store nothing.
func TestRunBadInput(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer())
	g := modelGateway(t, m, nil)
	s, other := g.newSession("a"), g.newSession("b")
	g.call("POST", "/v1/sessions/"+other.ID+"/close", other.Token, nil, 200, nil)
	cases := []struct {
		name, path, secret string
		body               any
		status             int
		code               string
	}{
		{"no input", "/v1/runs", testAgentKey, map[string]any{}, 400, "BAD_REQUEST"},
		{"max_steps too large", "/v1/runs", testAgentKey, map[string]any{"input": "x", "max_steps": 1000}, 400, "BAD_REQUEST"},
		{"negative max_steps", "/v1/runs", testAgentKey, map[string]any{"input": "x", "max_steps": -1}, 400, "BAD_REQUEST"},
		{"bad role", "/v1/runs", testAgentKey, map[string]any{"messages": []any{map[string]any{"role": "wizard", "content": "x"}}}, 400, "BAD_REQUEST"},
		{"messages not a list", "/v1/runs", testAgentKey, map[string]any{"messages": "hello"}, 400, "BAD_REQUEST"},
		{"unanswered tool call", "/v1/runs", testAgentKey, map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": "x"},
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "t1", "type": "function", "function": map[string]any{"name": "echo", "arguments": "{}"}}}},
		}}, 400, "BAD_REQUEST"},
		{"unknown field", "/v1/runs", testAgentKey, map[string]any{"input": "x", "temperature": 2}, 400, "BAD_REQUEST"},
		{"not JSON", "/v1/runs", testAgentKey, "{", 400, "BAD_REQUEST"},
		{"unknown session", "/v1/runs", testAgentKey, map[string]any{"input": "x", "session_id": "nope"}, 404, "NOT_FOUND"},
		{"closed session", "/v1/runs", testAgentKey, map[string]any{"input": "x", "session_id": other.ID}, 404, "NOT_FOUND"},
		{"no agent key", "/v1/runs", "", map[string]any{"input": "x"}, 401, "UNAUTHENTICATED"},
		{"session token on /v1/runs", "/v1/runs", s.Token, map[string]any{"input": "x"}, 401, "UNAUTHENTICATED"},
		{"another session's token", "/v1/sessions/" + s.ID + "/runs", other.Token, map[string]any{"input": "x"}, 401, "UNAUTHENTICATED"},
		{"session route, other session_id", "/v1/sessions/" + s.ID + "/runs", s.Token, map[string]any{"input": "x", "session_id": "other"}, 400, "BAD_REQUEST"},
	}
	for _, c := range cases {
		status, body := g.do("POST", c.path, c.secret, c.body)
		if status != c.status || errorCode(body) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	status, body := g.do("GET", "/v1/runs/nope", testAgentKey, nil)
	if status != 404 || errorCode(body) != "NOT_FOUND" {
		t.Fatalf("unknown run: %d %s", status, body)
	}
	var runs int
	if err := g.db(t).Get(&runs, `SELECT COUNT(*) FROM runs`); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Fatalf("%d runs stored by bad requests", runs)
	}
}

// TestRunMaxSteps: a model that never stops calling tools is cut off
// after max_steps turns, and the run fails with MAX_STEPS.
func TestRunMaxSteps(t *testing.T) {
	turn := 0
	m := startFakeModel(t, func(chatRequest) modelTurn {
		turn++
		return modelTurn{ToolCalls: []chatToolCall{callTool("t", "current_time", `{"time_zone":"Europe/Paris"}`)}}
	})
	g := modelGateway(t, m, nil)
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "what time is it", "max_steps": 2}, 200, &run)
	if run.Status != "failed" || run.Error == nil || run.Error.Code != "MAX_STEPS" || run.Steps != 2 {
		t.Fatalf("run = %+v", run)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("model asked %d times, want 2", n)
	}
	// The built-in calls were stored as calls of the run, without a session.
	if len(run.Calls) != 2 || run.Calls[0].Tool != "current_time" || run.Calls[0].SessionID != "" || run.Calls[0].Status != "completed" {
		t.Fatalf("calls = %+v", run.Calls)
	}
}

// TestRunModelFailure: a model endpoint that fails ends the run failed
// with MODEL_ERROR and the endpoint's message.
func TestRunModelFailure(t *testing.T) {
	g := startGateway(t, func(c *serverConfig) {
		c.LLMBaseURL, c.LLMModel = "http://127.0.0.1:1/v1", "nowhere"
	})
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "hi"}, 200, &run)
	if run.Status != "failed" || run.Error == nil || run.Error.Code != "MODEL_ERROR" {
		t.Fatalf("run = %+v", run)
	}
}

// TestHookDeniesCall: an embedder's before-call hook denies calls; the
// caller gets 403 with the reason and nothing is stored; in a run the
// model hears the reason. A registration rule rejects a tool.
func TestHookDeniesCall(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "echo", `{"text":"the secret plan"}`)))
	g := modelGateway(t, m, nil)
	hooks := g.Server.Engine.Hooks()
	hooks.OnBeforeCall(func(_ context.Context, c toolgate.CallCheck) error {
		if strings.Contains(string(c.Args), "secret") {
			return errors.New("secrets stay on the server")
		}
		return nil
	})
	hooks.OnBeforeRegister(func(_ string, spec toolgate.ToolSpec) error {
		if strings.HasPrefix(spec.Name, "shell_") {
			return errors.New("shell tools are not allowed here")
		}
		return nil
	})
	s := g.newSession("desk")
	reply := g.register(s, echoTool, map[string]any{"name": "shell_exec", "description": "run a command"})
	rejected := reply["rejected"].([]any)
	if reply["registered"] != 1.0 || len(rejected) != 1 || !strings.Contains(rejected[0].(map[string]any)["message"].(string), "shell tools are not allowed") {
		t.Fatalf("registration = %v", reply)
	}

	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "a secret"}})
	if status != 403 || errorCode(body) != "PERMISSION_DENIED" || !strings.Contains(string(body), "secrets stay on the server") {
		t.Fatalf("denied call: %d %s", status, body)
	}
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls?session_id="+s.ID, testAgentKey, nil, 200, &list)
	if len(list.Calls) != 0 {
		t.Fatalf("a denied call was stored: %+v", list.Calls)
	}

	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "send the plan"}, 200, &run)
	if run.Status != "finished" || !strings.Contains(run.Output, "PERMISSION_DENIED") || !strings.Contains(run.Output, "secrets stay on the server") {
		t.Fatalf("run = %+v", run)
	}
}

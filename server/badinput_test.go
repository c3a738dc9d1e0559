package server_test

import (
	"strings"
	"testing"
)

// TestBadInputs sends each kind of bad request and checks the status and
// error code it gets, and that it changed nothing.
func TestBadInputs(t *testing.T) {
	g := startGateway(t, func(c *serverConfig) { c.MaxBodyBytes = 4096 })
	s := g.newSession("client")
	other := g.newSession("other")
	g.register(s, echoTool)
	sid := "/v1/sessions/" + s.ID
	huge := `{"type":"register_tools","tools":[{"name":"big","description":"` + strings.Repeat("x", 5000) + `"}]}`

	cases := []struct {
		name, method, path, secret string
		body                       any
		status                     int
		code                       string
	}{
		{"malformed JSON", "POST", sid + "/tools", s.Token, `{"tools": [`, 400, "BAD_REQUEST"},
		{"not an object", "POST", sid + "/tools", s.Token, `[1,2]`, 400, "BAD_REQUEST"},
		{"no tools array", "POST", sid + "/tools", s.Token, `{"type":"register_tools"}`, 400, "BAD_REQUEST"},
		{"tools of wrong type", "POST", sid + "/tools", s.Token, `{"tools":"echo"}`, 400, "BAD_REQUEST"},
		{"wrong register type", "POST", sid + "/tools", s.Token, `{"type":"hello","tools":[]}`, 400, "BAD_REQUEST"},
		{"oversized body", "POST", sid + "/tools", s.Token, huge, 413, "PAYLOAD_TOO_LARGE"},
		{"no token", "POST", sid + "/tools", "", `{"tools":[]}`, 401, "UNAUTHENTICATED"},
		{"wrong token", "POST", sid + "/tools", "tgs_nope", `{"tools":[]}`, 401, "UNAUTHENTICATED"},
		{"another session's token", "POST", sid + "/tools", other.Token, `{"tools":[]}`, 403, "PERMISSION_DENIED"},
		{"agent key is not a session token", "GET", sid + "/events", testAgentKey, nil, 401, "UNAUTHENTICATED"},
		{"stream with bad Last-Event-ID", "GET", sid + "/events?last_event_id=abc", s.Token, nil, 400, "BAD_REQUEST"},
		{"stream with future Last-Event-ID", "GET", sid + "/events?last_event_id=999999", s.Token, nil, 400, "BAD_REQUEST"},
		{"poll with bad cursor", "GET", sid + "/poll?cursor=x", s.Token, nil, 400, "BAD_REQUEST"},
		{"poll with negative cursor", "GET", sid + "/poll?cursor=-1", s.Token, nil, 400, "BAD_REQUEST"},
		{"poll with future cursor", "GET", sid + "/poll?cursor=123456", s.Token, nil, 400, "BAD_REQUEST"},
		{"poll with bad wait", "GET", sid + "/poll?wait_ms=soon", s.Token, nil, 400, "BAD_REQUEST"},
		{"answer without id", "POST", sid + "/results", s.Token, `{"type":"tool_result","success":true}`, 400, "BAD_REQUEST"},
		{"answer of unknown type", "POST", sid + "/results", s.Token, `{"type":"result","id":"x"}`, 400, "BAD_REQUEST"},
		{"answer contradicting itself", "POST", sid + "/results", s.Token, `{"type":"tool_result","id":"x","success":false}`, 400, "BAD_REQUEST"},
		{"answer with bad code", "POST", sid + "/results", s.Token, `{"type":"tool_error","id":"x","code":"oops lower"}`, 400, "BAD_REQUEST"},
		{"answer for unknown call", "POST", sid + "/results", s.Token, `{"type":"tool_result","id":"nope","success":true}`, 404, "NOT_FOUND"},
		{"batch without results", "POST", sid + "/results", s.Token, `{"type":"tool_results"}`, 400, "BAD_REQUEST"},
		{"progress for unknown call", "POST", sid + "/progress", s.Token, `{"type":"tool_progress","id":"nope"}`, 404, "NOT_FOUND"},
		{"session with bad platform", "POST", "/v1/sessions", "", `{"client":{"platform":"toaster"}}`, 400, "BAD_REQUEST"},
		{"session with unknown field", "POST", "/v1/sessions", "", `{"clinet":{}}`, 400, "BAD_REQUEST"},
		{"session with metadata not an object", "POST", "/v1/sessions", "", `{"metadata":[1]}`, 400, "BAD_REQUEST"},
		{"caller without key", "POST", "/v1/calls", "", `{}`, 401, "UNAUTHENTICATED"},
		{"caller with session token", "GET", "/api/tools", s.Token, nil, 401, "UNAUTHENTICATED"},
		{"call with unknown field", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","argz":{}}`, 400, "BAD_REQUEST"},
		{"call with args of wrong type", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","args":{"text":5}}`, 422, "INVALID_ARGS"},
		{"call missing a required arg", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","args":{}}`, 422, "INVALID_ARGS"},
		{"call with args not an object", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","args":"text"}`, 422, "INVALID_ARGS"},
		{"call of unknown tool", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"camera","args":{}}`, 404, "TOOL_NOT_FOUND"},
		{"call of unknown session", "POST", "/v1/calls", testAgentKey, `{"session_id":"nope","tool":"echo","args":{"text":"x"}}`, 404, "NOT_FOUND"},
		{"call without tool", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `"}`, 400, "BAD_REQUEST"},
		{"call timeout out of bounds", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","args":{"text":"x"},"timeout_ms":99999999}`, 400, "BAD_REQUEST"},
		{"call timeout of wrong type", "POST", "/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"echo","timeout_ms":"30s"}`, 400, "BAD_REQUEST"},
		{"history with bad status", "GET", "/v1/calls?status=done", testAgentKey, nil, 400, "BAD_REQUEST"},
		{"history with bad cursor", "GET", "/v1/calls?before=yesterday", testAgentKey, nil, 400, "BAD_REQUEST"},
		{"history with bad limit", "GET", "/v1/calls?limit=-3", testAgentKey, nil, 400, "BAD_REQUEST"},
		{"wait with bad wait_ms", "GET", "/v1/calls/x?wait_ms=later", testAgentKey, nil, 400, "BAD_REQUEST"},
		{"unknown call", "GET", "/v1/calls/nope", testAgentKey, nil, 404, "NOT_FOUND"},
		{"cancel unknown call", "POST", "/v1/calls/nope/cancel", testAgentKey, nil, 404, "NOT_FOUND"},
		{"remove unknown tool", "DELETE", sid + "/tools/camera", s.Token, nil, 404, "TOOL_NOT_FOUND"},
		{"unknown route", "GET", "/v2/everything", "", nil, 404, "NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.t = t
			status, body := g.do(tc.method, tc.path, tc.secret, tc.body)
			if status != tc.status || errorCode(body) != tc.code {
				t.Errorf("got %d %s, want %d %s: %s", status, errorCode(body), tc.status, tc.code, body)
			}
			if !strings.Contains(string(body), `"message":"`) {
				t.Errorf("no message in %s", body)
			}
		})
	}
	g.t = t

	// Nothing above changed anything: one tool, no calls.
	var view struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	g.call("GET", sid, s.Token, nil, 200, &view)
	if len(view.Tools) != 1 || view.Tools[0].Name != "echo" {
		t.Errorf("tools after bad inputs = %+v, want only echo", view.Tools)
	}
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls", testAgentKey, nil, 200, &list)
	if len(list.Calls) != 0 {
		t.Errorf("%d calls stored by bad requests", len(list.Calls))
	}
}

// TestRegistrationRejections: each bad tool is rejected with its reason
// while the good ones in the same request are registered. The tool cap
// (4) counts the tools that passed the checks made before compiling, in
// the order listed: echo, app_ok, app_badschema and app_third are within
// it (app_badschema is then refused by the compiler; app_remote_ref's
// $ref pointing outside its schema is refused before), app_fourth is
// past it.
func TestRegistrationRejections(t *testing.T) {
	g := startGateway(t, func(c *serverConfig) { c.MaxToolsPerSess = 4; c.ToolNamePattern = `^(app_|echo)` })
	s := g.newSession("reg")
	reply := g.register(s,
		echoTool,
		map[string]any{"name": "app_ok", "description": "fine", "timeout_ms": 5000, "requires_approval": "always", "rate_limit": map[string]any{"requests_per_minute": 5}, "read_only": true},
		map[string]any{"name": "bad name!", "description": "x"},
		map[string]any{"name": "other_prefix", "description": "x"},
		map[string]any{"name": "app_nodesc", "description": " "},
		map[string]any{"name": "app_longdesc", "description": strings.Repeat("d", 4097)},
		map[string]any{"name": "app_array", "description": "x", "parameters": map[string]any{"type": "array"}},
		map[string]any{"name": "app_badschema", "description": "x", "parameters": map[string]any{"type": "object", "properties": 5}},
		map[string]any{"name": "app_remote_ref", "description": "x", "parameters": map[string]any{"type": "object", "$ref": "file:///etc/passwd"}},
		map[string]any{"name": "app_timeout", "description": "x", "timeout_ms": 10},
		map[string]any{"name": "app_approval", "description": "x", "requires_approval": "sometimes"},
		map[string]any{"name": "app_rate", "description": "x", "rate_limit": map[string]any{"requests_per_minute": -1}},
		map[string]any{"name": "app_third", "description": "third fits"},
		map[string]any{"name": "app_fourth", "description": "over the limit"},
	)
	if reply["count"] != 14.0 || reply["registered"] != 3.0 {
		t.Fatalf("reply = %v", reply)
	}
	rejected := map[string]string{}
	for _, r := range reply["rejected"].([]any) {
		m := r.(map[string]any)
		rejected[m["name"].(string)] = m["code"].(string) + ": " + m["message"].(string)
	}
	for _, name := range []string{"bad name!", "other_prefix", "app_nodesc", "app_longdesc", "app_array", "app_badschema", "app_remote_ref", "app_timeout", "app_approval", "app_rate", "app_fourth"} {
		if rejected[name] == "" {
			t.Errorf("%s was not rejected", name)
		}
	}
	if len(rejected) != 11 {
		t.Errorf("rejected = %v", rejected)
	}
	// Traits are stored as given.
	var tools struct {
		Tools []map[string]any `json:"tools"`
	}
	g.call("GET", "/api/tools?session_id="+s.ID, testAgentKey, nil, 200, &tools)
	if len(tools.Tools) != 3 {
		t.Fatalf("tools = %v", tools.Tools)
	}
	ok := tools.Tools[0]
	if ok["name"] != "app_ok" || ok["requires_approval"] != "always" || ok["read_only"] != true || ok["timeout_ms"] != 5000.0 ||
		ok["rate_limit"].(map[string]any)["requests_per_minute"] != 5.0 || ok["source"].(map[string]any)["kind"] != "remote" {
		t.Errorf("app_ok = %v", ok)
	}

	// replace: true keeps only what is listed.
	reply = g.register(s, echoTool)
	g.call("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, map[string]any{"replace": true, "tools": []any{echoTool}}, 200, &reply)
	g.call("GET", "/api/tools?session_id="+s.ID, testAgentKey, nil, 200, &tools)
	if len(tools.Tools) != 1 || tools.Tools[0]["name"] != "echo" {
		t.Errorf("after replace: %v", tools.Tools)
	}
}

package server_test

import (
	"strings"
	"testing"
)

// TestRequestEnvelopeIsStrictJSON: every JSON request body is held to
// what a call's args are held to. A member named twice in the envelope
// (Go's reader keeps the last, others the first: a proxy or a log reads
// another call than the gateway runs), a name with \u0000, or invalid
// UTF-8 (read as U+FFFD) is refused 400 BAD_REQUEST naming the fault,
// and nothing happens. Before, {"tool": "a", "tool": "b"} called b.
func TestRequestEnvelopeIsStrictJSON(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("phone")
	g.register(s, map[string]any{"name": "a", "description": "a", "parameters": map[string]any{"type": "object"}})
	g.register(s, map[string]any{"name": "b", "description": "b", "parameters": map[string]any{"type": "object"}})
	for _, c := range []struct {
		path, secret, body, want string
	}{
		{"/v1/calls", testAgentKey, `{"session_id":"` + s.ID + `","tool":"a","tool":"b","args":{},"wait":false}`, `the body names the member \"tool\" twice in the top-level object`},
		{"/v1/sessions/" + s.ID + "/results", s.Token, `{"type":"tool_result","id":"x","output":1,"id\u0000":"y"}`, `has a \\u0000 in a member name of the top-level object`},
		{"/v1/calls", testAgentKey, "{\"session_id\":\"" + s.ID + "\",\"tool\":\"a\xff\",\"args\":{},\"wait\":false}", `not valid UTF-8`},
		{"/v1/sessions", "", `{"client":{"name":"x","name":"y"}}`, `the body names the member \"name\" twice in the object at /client`},
		{"/v1/sessions/" + s.ID + "/tools", s.Token, `{"tools":[{"name":"c","name":"d","description":"c","parameters":{"type":"object"}}]}`, `twice in the object at /tools/0`},
		{"/v1/sessions/" + s.ID + "/results", s.Token, `{"type":"tool_result","id":"x","id":"y","output":1}`, `names the member \"id\" twice`},
	} {
		status, body := g.do("POST", c.path, c.secret, c.body)
		if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(string(body), c.want) {
			t.Errorf("POST %s %s: %d %s; want 400 BAD_REQUEST with %s", c.path, c.body, status, body, c.want)
		}
	}
	if calls := g.callsOf("a"); len(calls) != 0 {
		t.Fatalf("calls of a after refused envelopes: %+v", calls)
	}
	if calls := g.callsOf("b"); len(calls) != 0 {
		t.Fatalf("calls of b after refused envelopes: %+v", calls)
	}
	if _, ok := g.apiTools()["c"]; ok {
		t.Fatal("tool c registered by a refused registration")
	}
}

// TestRequestEnvelopeNamesAreCaseSensitive: Go's reader matches a member
// to a field case-insensitively, with Unicode folding ("TOOL", "Tool" and
// "ſession_id", U+017F, are tool and session_id to it; of two, the last
// wins), where a proxy, a log or any other reader sees another member. A
// member named in another case than its field's is refused 400 naming
// it, at any level of the envelope, and nothing happens; args, free-form
// and read as raw JSON, keep their names as they are. Before,
// {"tool":"a","TOOL":"b"} called b, and "ſession_id" chose the session.
func TestRequestEnvelopeNamesAreCaseSensitive(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("phone")
	other := g.newSession("tablet")
	for _, sess := range []session{s, other} {
		g.register(sess, map[string]any{"name": "a", "description": "a", "parameters": map[string]any{"type": "object"}})
		g.register(sess, map[string]any{"name": "b", "description": "b", "parameters": map[string]any{"type": "object"}})
	}
	sid := `"session_id":"` + s.ID + `"`
	for _, c := range []struct {
		path, secret, body, want string
	}{
		{"/v1/calls", testAgentKey, `{` + sid + `,"tool":"a","TOOL":"b","args":{},"wait":false}`, `the body names the member \"TOOL\" in the top-level object: member names are case-sensitive (did you mean \"tool\"?)`},
		{"/v1/calls", testAgentKey, `{` + sid + `,"Tool":"b","args":{},"wait":false}`, `names the member \"Tool\"`},
		{"/v1/calls", testAgentKey, `{` + sid + `,"\u017fession_id":"` + other.ID + `","tool":"a","args":{},"wait":false}`, `names the member \"ſession_id\" in the top-level object`},
		{"/v1/calls", testAgentKey, `{"SESSION_ID":"` + other.ID + `",` + sid + `,"tool":"a","args":{},"wait":false}`, `names the member \"SESSION_ID\"`},
		{"/v1/sessions", "", `{"client":{"name":"x","NAME":"y"}}`, `names the member \"NAME\" in the object at /client`},
		{"/v1/sessions/" + s.ID + "/tools", s.Token, `{"tools":[{"name":"c","Name":"d","description":"c","parameters":{"type":"object"}}]}`, `names the member \"Name\" in the object at /tools/0`},
		{"/v1/sessions/" + s.ID + "/results", s.Token, `{"type":"tool_result","id":"x","ID":"y","output":1}`, `names the member \"ID\"`},
		{"/v1/sessions/" + s.ID + "/results", s.Token, `{"type":"tool_results","results":[{"type":"tool_result","id":"x","Output":1}]}`, `names the member \"Output\" in the object at /results/0`},
	} {
		status, body := g.do("POST", c.path, c.secret, c.body)
		if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(string(body), c.want) {
			t.Errorf("POST %s %s: %d %s; want 400 BAD_REQUEST with %s", c.path, c.body, status, body, c.want)
		}
	}
	for _, tool := range []string{"a", "b"} {
		if calls := g.callsOf(tool); len(calls) != 0 {
			t.Fatalf("calls of %s after refused envelopes: %+v", tool, calls)
		}
	}
	if _, ok := g.apiTools()["c"]; ok {
		t.Fatal("tool c registered by a refused registration")
	}
	// Args are free-form: members that differ only in case are the tool's.
	g.call("POST", "/v1/calls", testAgentKey, `{`+sid+`,"tool":"a","args":{"id":1,"ID":2},"wait":false}`, 202, nil)
}

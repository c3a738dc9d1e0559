package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArgsReadAlikeOrRefused: a call whose args name a member twice (at
// any depth), hold invalid UTF-8 or half a surrogate pair is refused 400
// BAD_REQUEST, for a session's tool and a built-in one, and nothing is
// stored: the validator would read one value (the last member, U+FFFD)
// and the client another, from the very bytes the gateway forwards.
// (Before, each of these was stored and sent: 202.)
func TestArgsReadAlikeOrRefused(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("phone")
	g.register(s, echoTool)
	call := func(tool, args string) string {
		session := `"session_id":"` + s.ID + `",`
		if tool != "echo" {
			session = ""
		}
		return `{` + session + `"tool":"` + tool + `","wait":false,"args":` + args + `}`
	}
	cases := []struct {
		name, body, message string
	}{
		{"a member twice", call("echo", `{"text":"shown","text":"sent"}`), `args names the member "text" twice in the top-level object`},
		{"a member twice, deep down", call("echo", `{"text":"a","opts":[{"k":1,"k":2}]}`), `args names the member "k" twice in the object at /opts/0`},
		{"a member twice, spelled with an escape", call("echo", `{"text":"a","\u0074ext":"b"}`), `args names the member "text" twice`},
		{"invalid UTF-8", call("echo", "{\"text\":\"caf\xe9\"}"), "args is not valid UTF-8"},
		{"half a surrogate pair", call("echo", `{"text":"\ud83d"}`), `args has a \u escape of half a surrogate pair at /text`},
		{"a built-in tool's member twice", call("current_time", `{"zone":"UTC","zone":"Europe/Paris"}`), `args names the member "zone" twice`},
		{"nested too deep", call("echo", `{"text":"a","n":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`), "args nests objects and arrays deeper than 128 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g.t = t
			status, body := g.do("POST", "/v1/calls", testAgentKey, c.body)
			var reply struct {
				Error struct{ Message string } `json:"error"`
			}
			_ = json.Unmarshal(body, &reply)
			if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(reply.Error.Message, c.message) {
				t.Errorf("got %d %s, want 400 BAD_REQUEST with %q", status, body, c.message)
			}
		})
	}
	g.t = t
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls", testAgentKey, nil, 200, &list)
	if len(list.Calls) != 0 {
		t.Errorf("%d calls stored from refused args", len(list.Calls))
	}
	// The same arguments, each member once, are a call.
	g.call("POST", "/v1/calls", testAgentKey, call("echo", `{"text":"café 😀","opts":[{"k":1}]}`), 202, nil)
}

// TestAgentLoopArgsReadAlikeOrRefused: a model's tool call with a member
// named twice, or half a surrogate pair, reaches the model back as a
// BAD_REQUEST tool error and is neither stored nor sent to the client.
func TestAgentLoopArgsReadAlikeOrRefused(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(
		callTool("c1", "echo", `{"text":"shown","text":"sent"}`),
		callTool("c2", "echo", `{"text":"\udc00"}`),
	))
	g := modelGateway(t, m, nil)
	s := g.newSession("phone")
	g.register(s, echoTool)
	var run runRecord
	decodeResponse(t, mustRequest(t, "POST", g.URL+"/v1/runs", map[string]any{"session_id": s.ID, "input": "echo"}), 200, &run)
	if run.Status != "finished" {
		t.Fatalf("run = %+v", run)
	}
	tools := map[string]string{}
	for _, msg := range m.Requests()[1].Messages {
		if msg.Role == "tool" {
			tools[msg.ToolCallID] = msg.Text()
		}
	}
	want := map[string]string{"c1": `names the member \"text\" twice`, "c2": "half a surrogate pair"}
	for id, part := range want {
		if !strings.Contains(tools[id], `"code":"BAD_REQUEST"`) || !strings.Contains(tools[id], part) {
			t.Errorf("tool message %s = %s; want BAD_REQUEST and %s", id, tools[id], part)
		}
	}
	if len(run.Calls) != 0 {
		t.Errorf("calls stored = %+v", run.Calls)
	}
}

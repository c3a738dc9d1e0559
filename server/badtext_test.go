package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Text that PostgreSQL's text refuses (a NUL, an invalid UTF-8 byte) and
// ids that cannot exist are refused with 400 or 404 before anything is
// stored, the same on SQLite and on PostgreSQL (where they were 500s, and
// one bad answer failed its whole batch): review 15, finding 3. Each
// request is followed by a look, through the API, at what it must not
// have changed. NUL inside JSON values (args, output, metadata) is stored
// as the escape and read back as sent.
func TestBadTextIsRefusedAlikeOnEveryDatabase(t *testing.T) {
	backends := map[string]func(t *testing.T) *gateway{
		"sqlite":   func(t *testing.T) *gateway { return startGateway(t, nil) },
		"postgres": func(t *testing.T) *gateway { return clusterNodes(t, 1, nil)[0] },
	}
	for name, start := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkBadText(t, start(t))
		})
	}
}

func checkBadText(t *testing.T, g *gateway) {
	s := g.newSession("tab")
	g.register(s, echoTool)
	c1 := g.startCall(s, "echo", map[string]any{"text": "a\u0000b"}, 60000) // a NUL in args is JSON: stored
	c2 := g.startCall(s, "echo", map[string]any{"text": "two"}, 60000)
	sessionsBefore := openSessions(g)
	sessionPath := "/v1/sessions/" + s.ID

	expect := func(what string, wantStatus int, wantCode string, status int, body []byte) {
		t.Helper()
		var reply struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(body, &reply)
		if status != wantStatus || reply.Error.Code != wantCode {
			t.Errorf("%s: %d %s, want %d %s", what, status, body, wantStatus, wantCode)
		}
	}

	// A session whose client name or version holds a NUL is not created.
	for _, client := range []string{`{"name":"a\u0000b"}`, `{"name":"tab","version":"1\u0000"}`} {
		status, body := g.do("POST", "/v1/sessions", "", `{"client":`+client+`}`)
		expect("POST /v1/sessions "+client, 400, "BAD_REQUEST", status, body)
	}
	if after := openSessions(g); after != sessionsBefore {
		t.Errorf("open sessions %d after the refusals, want %d", after, sessionsBefore)
	}
	// Metadata is JSON: a NUL in a value is kept.
	var created session
	g.call("POST", "/v1/sessions", "", `{"metadata":{"note":"a\u0000b"}}`, 201, &created)
	var view struct {
		Metadata map[string]string `json:"metadata"`
	}
	g.call("GET", "/v1/sessions/"+created.ID, testAgentKey, nil, 200, &view)
	if view.Metadata["note"] != "a\x00b" {
		t.Errorf("metadata read back as %q, want a NUL kept", view.Metadata["note"])
	}

	// A tool whose description holds a NUL is rejected alone.
	var registered struct {
		Rejected []struct{ Name, Code string } `json:"rejected"`
	}
	g.call("POST", sessionPath+"/tools", s.Token, `{"tools":[`+
		`{"name":"bad","description":"a\u0000b"},{"name":"good","description":"fine"}]}`, 200, &registered)
	if len(registered.Rejected) != 1 || registered.Rejected[0].Name != "bad" || registered.Rejected[0].Code != "BAD_REQUEST" {
		t.Errorf("rejected %+v, want the tool bad alone, BAD_REQUEST", registered.Rejected)
	}
	if tools := sessionTools(t, g, s.ID); strings.Join(tools, ",") != "echo,good" {
		t.Errorf("the session's tools are %v, want echo and good", tools)
	}

	// One answer whose error message holds a NUL: refused, the call open.
	status, body := g.do("POST", sessionPath+"/results", s.Token,
		`{"type":"tool_error","id":"`+c1.ID+`","error":"no\u0000","code":"IO"}`)
	expect("a tool_error with a NUL", 400, "BAD_REQUEST", status, body)
	status, body = g.do("POST", sessionPath+"/results", s.Token, "{\"type\":\"tool_result\",\"id\":\""+c1.ID+"\",\"output\":\"\xff\"}")
	expect("an output that is not UTF-8", 400, "BAD_REQUEST", status, body)
	// A batch: the bad entries get their own errors, the good one is stored.
	var acks struct {
		Results []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct{ Code string }
		} `json:"results"`
	}
	g.call("POST", sessionPath+"/results", s.Token, `{"type":"tool_results","results":[`+
		`{"type":"tool_error","id":"`+c1.ID+`","error":"bad\u0000"},`+
		`{"type":"tool_result","id":"a\u0000b","output":1},`+
		`{"type":"tool_result","id":"`+c2.ID+`","output":{"text":"x\u0000y"}}]}`, 200, &acks)
	wantAcks := []string{"BAD_REQUEST", "NOT_FOUND", "completed"}
	for i, ack := range acks.Results {
		got := ack.Status
		if ack.Error != nil {
			got = ack.Error.Code
		}
		if i >= len(wantAcks) || got != wantAcks[i] {
			t.Errorf("ack %d is %+v, want %s", i, ack, wantAcks[i])
		}
	}
	if len(acks.Results) != len(wantAcks) {
		t.Errorf("%d acks, want %d", len(acks.Results), len(wantAcks))
	}
	var rec callRecord
	g.call("GET", "/v1/calls/"+c2.ID, testAgentKey, nil, 200, &rec)
	if rec.Status != "completed" || string(rec.Output) != `{"text":"x\u0000y"}` {
		t.Errorf("the batch's good answer: %s %s, want completed with the NUL kept", rec.Status, rec.Output)
	}
	g.call("GET", "/v1/calls/"+c1.ID, testAgentKey, nil, 200, &rec)
	if rec.Status == "completed" || rec.Status == "failed" {
		t.Errorf("the call answered with refused text ended %s, want it open", rec.Status)
	}

	// Progress of a call id that cannot exist; progress that is not UTF-8.
	status, body = g.do("POST", sessionPath+"/progress", s.Token, `{"id":"a\u0000b","progress":1}`)
	expect("progress of an id with a NUL", 404, "NOT_FOUND", status, body)
	status, body = g.do("POST", sessionPath+"/progress", s.Token, "{\"id\":\""+c1.ID+"\",\"progress\":\"\xff\"}")
	expect("progress that is not UTF-8", 400, "BAD_REQUEST", status, body)

	// Ids, names and filters at the boundary.
	for _, tc := range []struct {
		method, path, secret string
		status               int
		code                 string
	}{
		{"GET", "/v1/calls/a%00b", testAgentKey, 404, "NOT_FOUND"},
		{"GET", "/v1/sessions/a%00b", testAgentKey, 404, "NOT_FOUND"},
		{"POST", "/v1/calls/a%00b/cancel", testAgentKey, 404, "NOT_FOUND"},
		{"POST", "/v1/calls/a%00b/approve", testAgentKey, 404, "NOT_FOUND"},
		{"DELETE", sessionPath + "/tools/a%00b", s.Token, 404, "TOOL_NOT_FOUND"},
		{"GET", "/api/tools?session_id=a%00b", testAgentKey, 404, "NOT_FOUND"},
		{"GET", "/v1/calls?tool=a%00b", testAgentKey, 400, "BAD_REQUEST"},
		{"GET", "/v1/calls?tool=%ff", testAgentKey, 400, "BAD_REQUEST"},
		{"GET", "/v1/calls?session_id=a%00b", testAgentKey, 400, "BAD_REQUEST"},
	} {
		status, body := g.do(tc.method, tc.path, tc.secret, nil)
		expect(tc.method+" "+tc.path, tc.status, tc.code, status, body)
	}
	callsBefore := countCalls(t, g)
	status, body = g.do("POST", "/v1/calls", testAgentKey, `{"session_id":"a\u0000b","tool":"echo","args":{"text":"x"}}`)
	expect("a call of a session id with a NUL", 404, "NOT_FOUND", status, body)
	status, body = g.do("POST", "/v1/calls", testAgentKey, `{"session_id":"`+s.ID+`","tool":"a\u0000b"}`)
	expect("a call of a tool name with a NUL", 404, "TOOL_NOT_FOUND", status, body)
	status, body = postWithHeader(t, g, "/v1/calls", "Idempotency-Key", "k\xff",
		`{"session_id":"`+s.ID+`","tool":"echo","args":{"text":"x"},"wait":false}`)
	expect("an Idempotency-Key that is not UTF-8", 400, "BAD_REQUEST", status, body)
	if !strings.Contains(string(body), "Idempotency-Key") {
		t.Errorf("the refusal %s does not name the header", body)
	}
	if after := countCalls(t, g); after != callsBefore {
		t.Errorf("%d calls after the refusals, want %d", after, callsBefore)
	}
}

// countCalls counts the calls through GET /v1/calls.
func countCalls(t *testing.T, g *gateway) int {
	t.Helper()
	var list struct {
		Calls []json.RawMessage `json:"calls"`
	}
	g.call("GET", "/v1/calls?limit=500", testAgentKey, nil, 200, &list)
	return len(list.Calls)
}

// sessionTools lists the names of a session's tools, sorted.
func sessionTools(t *testing.T, g *gateway, sid string) []string {
	t.Helper()
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	g.call("GET", "/api/tools?session_id="+sid, testAgentKey, nil, 200, &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// postWithHeader posts body with the agent key and one more header.
func postWithHeader(t *testing.T, g *gateway, path, header, value, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	validator "github.com/pb33f/libopenapi-validator"
)

// openAPICheck sends requests to a real gateway and holds each request
// and its reply to the OpenAPI document.
type openAPICheck struct {
	t    *testing.T
	url  string
	v    validator.Validator
	seen map[string]bool // "METHOD /path status" of the replies checked
}

// do sends a request (body: a string sent as it is, or a value sent as
// JSON; nil sends none), checks that the reply has the status wanted and
// that request and reply match the document, and returns the reply's body.
// A request that is refused (a status of 400 or more) may break the
// document on purpose: only its reply is checked then.
func (c *openAPICheck) do(method, path, secret string, body any, want int) []byte {
	c.t.Helper()
	return c.send(method, path, secret, body, want, want < 400)
}

// send is do, checking the request against the document only with
// checkRequest.
func (c *openAPICheck) send(method, path, secret string, body any, want int, checkRequest bool) []byte {
	c.t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			c.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(data))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, got)
	}
	// The validator reads both bodies again.
	req.Body = io.NopCloser(bytes.NewReader(data))
	resp.Body = io.NopCloser(bytes.NewReader(got))
	check := c.v.ValidateHttpResponse
	if checkRequest {
		check = c.v.ValidateHttpRequestResponse
	}
	if ok, errs := check(req, resp); !ok {
		c.t.Errorf("%s %s (%d) does not match the OpenAPI document:\n%s\nreply: %s", method, path, resp.StatusCode, describeValidation(errs), got)
	}
	c.seen[method+" "+req.URL.Path+" "+resp.Status[:3]] = true
	return got
}

// decode is do with the reply decoded into a map.
func (c *openAPICheck) decode(method, path, secret string, body any, want int) map[string]any {
	c.t.Helper()
	var out map[string]any
	data := c.send(method, path, secret, body, want, true)
	if err := json.Unmarshal(data, &out); err != nil {
		c.t.Fatalf("%s %s: %v: %s", method, path, err, data)
	}
	return out
}

// TestOpenAPIRealReplies runs the main flows through a real gateway (a
// client's session, registration, long-poll, answers; a caller's calls,
// lists, cancel; errors of several codes) and holds every request and
// reply to the OpenAPI document, so that neither can drift from the other
// unseen: the document's records refuse members they do not name.
func TestOpenAPIRealReplies(t *testing.T) {
	g := startGateway(t, nil)
	c := &openAPICheck{t: t, url: g.URL, v: newOpenAPIValidator(t), seen: map[string]bool{}}
	agent := testAgentKey

	c.do("GET", "/healthz", "", nil, 200)
	c.do("GET", "/openapi.json", "", nil, 200)
	c.do("GET", "/metrics", agent, nil, 200)
	c.do("GET", "/metrics", "", nil, 401)

	// A client's session and its tools.
	created := c.decode("POST", "/v1/sessions", "", map[string]any{
		"client": map[string]any{"name": "openapi", "version": "1", "platform": "web"}, "metadata": map[string]any{"user": "ada"}}, 201)
	sid, token := created["session_id"].(string), created["token"].(string)
	// The third tool breaks the document's name pattern: the gateway
	// rejects it alone, and the reply says so.
	var reg map[string]any
	regReply := c.send("POST", "/v1/sessions/"+sid+"/tools", token, map[string]any{"type": "register_tools", "tools": []any{
		map[string]any{"name": "echo", "description": "Echo the text", "timeout_ms": 30000, "requires_approval": "never",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
			"rate_limit": map[string]any{"requests_per_minute": 600}, "read_only": true},
		map[string]any{"name": "spare", "description": "Removed later"},
		map[string]any{"name": "bad name", "description": "rejected"}}}, 200, false)
	if err := json.Unmarshal(regReply, &reg); err != nil || reg["registered"] != 2.0 {
		t.Fatalf("registered: %v", reg)
	}
	c.do("GET", "/v1/sessions/"+sid, token, nil, 200)
	c.do("GET", "/v1/sessions/"+sid, agent, nil, 200)
	c.do("GET", "/v1/sessions", agent, nil, 200)
	c.do("GET", "/api/tools", agent, nil, 200)
	c.do("GET", "/api/tools?session_id="+sid+"&descriptions=registered", agent, nil, 200)
	c.do("DELETE", "/v1/sessions/"+sid+"/tools/spare", token, nil, 200)
	c.do("DELETE", "/v1/sessions/"+sid+"/tools/spare", token, nil, 404)

	// A call, received by long-poll, with progress and an answer.
	call := c.decode("POST", "/v1/calls", agent, map[string]any{"session_id": sid, "tool": "echo", "args": map[string]any{"text": "hi"}, "wait": false}, 202)
	id := call["id"].(string)
	poll := c.decode("GET", "/v1/sessions/"+sid+"/poll?wait_ms=0", token, nil, 200)
	if events, _ := poll["events"].([]any); len(events) != 1 {
		t.Fatalf("poll: %v", poll)
	}
	c.do("POST", "/v1/sessions/"+sid+"/progress", token, map[string]any{"type": "tool_progress", "id": id, "progress": map[string]any{"current": 1}}, 200)
	c.do("GET", "/v1/calls/"+id, agent, nil, 200)
	c.do("POST", "/v1/sessions/"+sid+"/results", token, map[string]any{"type": "tool_result", "id": id, "success": true, "output": map[string]any{"text": "hi"}}, 200)
	c.do("POST", "/v1/sessions/"+sid+"/results", token, map[string]any{"type": "tool_result", "id": id, "output": "again"}, 200) // duplicate
	c.do("GET", "/v1/calls/"+id+"?wait_ms=10", agent, nil, 200)
	c.do("GET", "/v1/calls?session_id="+sid+"&limit=10", agent, nil, 200)

	// A batch of answers, one of them to an unknown call.
	second := c.decode("POST", "/v1/calls", agent, map[string]any{"session_id": sid, "tool": "echo", "args": map[string]any{}, "wait": false}, 202)
	c.do("POST", "/v1/sessions/"+sid+"/results", token, map[string]any{"type": "tool_results", "results": []any{
		map[string]any{"type": "tool_error", "id": second["id"], "error": "no", "code": "AUTH_REQUIRED", "details": map[string]any{"hint": "x"}},
		map[string]any{"type": "tool_result", "id": "01a20a81-03f4-7bfc-94c9-f311e9a155a8"}}}, 200)

	// A call cancelled, then cancelled again; several sessions polled at once.
	third := c.decode("POST", "/v1/calls", agent, map[string]any{"session_id": sid, "tool": "echo", "args": map[string]any{}, "wait": false}, 202)
	c.do("POST", "/v1/poll", "", map[string]any{"sessions": []any{
		map[string]any{"session_id": sid, "token": token},
		map[string]any{"session_id": "01a20a81-03f4-7bfc-94c9-f311e9a155a8", "token": "tgs_nope"}}, "wait_ms": 0}, 200)
	c.do("POST", "/v1/calls/"+third["id"].(string)+"/cancel", agent, nil, 200)
	c.do("POST", "/v1/calls/"+third["id"].(string)+"/cancel", agent, nil, 409)
	c.do("GET", "/v1/sessions/"+sid+"/poll?wait_ms=0&cursor=0", token, nil, 200)

	// Errors of several codes, each in the error envelope.
	c.do("GET", "/v1/calls", "", nil, 401)
	c.do("GET", "/v1/calls?limit=0", agent, nil, 400)
	c.do("POST", "/v1/calls", agent, map[string]any{"tool": "echo", "extra": 1}, 400)
	c.do("POST", "/v1/calls", agent, map[string]any{"session_id": sid, "tool": "echo", "args": map[string]any{"text": 1}}, 422)
	c.do("GET", "/v1/calls/01a20a81-03f4-7bfc-94c9-f311e9a155a8", agent, nil, 404)
	c.do("POST", "/v1/runs", agent, map[string]any{"input": "hi"}, 503) // no model configured
	c.do("POST", "/v1/sessions/"+sid+"/settings", token, map[string]any{"auto_approve": true}, 200)

	// Calls that await approval, approved and denied.
	c.do("POST", "/v1/sessions/"+sid+"/tools", token, map[string]any{"replace": true, "tools": []any{
		map[string]any{"name": "guarded", "description": "Needs approval", "requires_approval": "always"}}}, 200)
	for _, decision := range []string{"approve", "deny"} {
		held := c.decode("POST", "/v1/calls", agent, map[string]any{"session_id": sid, "tool": "guarded", "wait": false}, 202)
		if held["status"] != "awaiting_approval" {
			t.Fatalf("call: %v", held)
		}
		var body any
		if decision == "deny" {
			body = map[string]any{"reason": "not today"}
		}
		c.do("POST", "/v1/calls/"+held["id"].(string)+"/"+decision, agent, body, 200)
	}

	// A stream of several sessions: one joins it and leaves again.
	c.multiStreamJoinLeave(sid, token)

	// The session closed, then its token refused.
	c.do("POST", "/v1/sessions/"+sid+"/close", token, nil, 200)
	c.do("GET", "/v1/sessions/"+sid, token, nil, 401)
	c.do("DELETE", "/v1/sessions/"+sid, agent, nil, 200)

	// The records refuse members they do not name: a call with one more
	// member than the document's Call does not pass.
	got := c.do("GET", "/v1/calls/"+id, agent, nil, 200)
	req, _ := http.NewRequest("GET", c.url+"/v1/calls/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+agent)
	drifted := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
		Body: io.NopCloser(strings.NewReader(strings.Replace(string(got), "{", `{"undocumented":1,`, 1)))}
	if ok, _ := c.v.ValidateHttpResponse(req, drifted); ok {
		t.Error("a call record with a member the document does not name passed the check")
	}

	if len(c.seen) < 30 {
		t.Errorf("only %d replies checked", len(c.seen))
	}
	var paths []string
	for p := range c.seen {
		paths = append(paths, p)
	}
	t.Logf("checked against the document: %s", strings.Join(paths, ", "))
}

// multiStreamJoinLeave opens POST /v1/streams for the session (its reply,
// a stream, is not read past its ready event), joins a second session onto
// it and takes it off again, checking the join's and the leave's replies.
func (c *openAPICheck) multiStreamJoinLeave(sid, token string) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data, _ := json.Marshal(map[string]any{"sessions": []any{map[string]any{"session_id": sid, "token": token}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url+"/v1/streams", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.t.Fatalf("POST /v1/streams: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var streamID string
	lines := bufio.NewScanner(resp.Body)
	for streamID == "" && lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			var ready struct {
				StreamID string `json:"stream_id"`
			}
			if err := json.Unmarshal([]byte(data), &ready); err != nil {
				c.t.Fatal(err)
			}
			streamID = ready.StreamID
		}
	}
	if streamID == "" {
		c.t.Fatalf("POST /v1/streams: no ready event (%v)", lines.Err())
	}
	other := c.decode("POST", "/v1/sessions", "", map[string]any{}, 201)
	otherID, otherToken := other["session_id"].(string), other["token"].(string)
	c.do("POST", "/v1/streams/"+streamID+"/sessions", "", map[string]any{"session_id": otherID, "token": otherToken}, 200)
	c.do("DELETE", "/v1/streams/"+streamID+"/sessions/"+otherID, otherToken, nil, 204)
	c.do("DELETE", "/v1/streams/"+streamID+"/sessions/"+otherID, otherToken, nil, 404)
}

// TestOpenAPIRunReplies holds the runs API's requests and replies to the
// document: runs of the agent key and of a session's token, each calling a
// built-in tool through a model (a real chat-completions server), and
// their records read back.
func TestOpenAPIRunReplies(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("t1", "current_time", `{"time_zone":"UTC"}`)))
	g := modelGateway(t, m, nil)
	c := &openAPICheck{t: t, url: g.URL, v: newOpenAPIValidator(t), seen: map[string]bool{}}
	agent := testAgentKey

	run := c.decode("POST", "/v1/runs", agent, map[string]any{"input": "What time is it?", "max_steps": 4}, 200)
	if run["status"] != "finished" {
		t.Fatalf("run: %v", run)
	}
	c.do("GET", "/v1/runs/"+run["id"].(string), agent, nil, 200)
	c.do("POST", "/v1/runs", agent, map[string]any{"input": "hi", "steps": 4}, 400)
	c.do("GET", "/v1/runs/01a20a81-03f4-7bfc-94c9-f311e9a155a8", agent, nil, 404)

	created := c.decode("POST", "/v1/sessions", "", map[string]any{}, 201)
	sid, token := created["session_id"].(string), created["token"].(string)
	own := c.decode("POST", "/v1/sessions/"+sid+"/runs", token, map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "What time is it?"}}}, 200)
	c.do("GET", "/v1/sessions/"+sid+"/runs/"+own["id"].(string), token, nil, 200)
	later := c.decode("POST", "/v1/runs", agent, map[string]any{"session_id": sid, "input": "later", "wait": false}, 202)
	if later["status"] != "running" {
		t.Errorf("run with wait false: %v", later)
	}
}

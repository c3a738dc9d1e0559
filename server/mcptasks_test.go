package server_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/server"
)

// rpcReply is a JSON-RPC response read from /mcp.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpRPC posts one JSON-RPC request to path at revision 2025-11-25 (with
// the MCP session id sid, if any) and returns the reply (read from JSON
// or from the SSE stream the SDK answers with) and the response's MCP
// session id.
func mcpRPC(t *testing.T, g *gateway, path, sid, method string, params any) (rpcReply, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", g.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpLegacy)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			// The stream may start with a priming event (an id, empty data).
			if line, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(line) != "" {
				data = []byte(strings.TrimSpace(line))
				break
			}
		}
	} else {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		data = buf.Bytes()
	}
	var reply rpcReply
	if err := json.Unmarshal(data, &reply); err != nil {
		t.Fatalf("%s: status %d, reply %q: %v", method, resp.StatusCode, data, err)
	}
	return reply, resp.Header.Get("Mcp-Session-Id")
}

// mcpInit starts a 2025-11-25 MCP session on path and returns its id and
// the initialize result.
func mcpInit(t *testing.T, g *gateway, path string) (string, json.RawMessage) {
	t.Helper()
	reply, sid := mcpRPC(t, g, path, "", "initialize", map[string]any{
		"protocolVersion": mcpLegacy, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tasks-test", "version": "1"},
	})
	if reply.Error != nil || sid == "" {
		t.Fatalf("initialize: %+v, session %q", reply.Error, sid)
	}
	body := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	req, _ := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpLegacy)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return sid, reply.Result
}

// mcpTask is the part of an MCP Task the tests check.
type mcpTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	TTL           int64  `json:"ttl"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

// wantRPCError fails unless reply is the JSON-RPC error code.
func wantRPCError(t *testing.T, what string, reply rpcReply, code int) {
	t.Helper()
	if reply.Error == nil || reply.Error.Code != code {
		t.Fatalf("%s: want error %d, got result %s error %+v", what, code, reply.Result, reply.Error)
	}
}

// A tools/call with params.task on /mcp answers at once with a task whose
// id is the call's; the gateway is killed with SIGKILL and started again
// on the same database; the client answers through REST; tasks/get and
// tasks/result (with no MCP session: the old one is gone) read the task
// from the store. Another route, an unknown id, bad params and a ttl
// asked too long are refused or bounded.
func TestMCPTaskSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proc := gatewaytest.Start(t, "--agent-key", testAgentKey, "--mcp-task-max-ttl", "2h")
	g := &gateway{t: t, URL: proc.URL, DBPath: proc.DBPath}
	mcpTaskScenario(t, g, g, func() { proc.Restart(t) })
}

// The same on PostgreSQL with two nodes: the task made on node 0, which
// is then killed with SIGKILL, is answered, read and its result taken
// through node 1.
func TestMCPTaskReadThroughAnotherNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := postgres.Server(t).NewDatabase(t)
	args := []string{"--mcp-task-max-ttl", "2h"}
	procs := gatewaytest.StartTogether(t,
		gatewaytest.Config{Name: "node0", DB: url, AgentKey: testAgentKey, Args: args},
		gatewaytest.Config{Name: "node1", DB: url, AgentKey: testAgentKey, Args: args})
	a := &gateway{t: t, URL: procs[0].URL}
	b := &gateway{t: t, URL: procs[1].URL}
	mcpTaskScenario(t, a, b, procs[0].Kill)
}

// mcpTaskScenario makes a task on a, calls crash, then answers it and
// reads it through b.
func mcpTaskScenario(t *testing.T, a, b *gateway, crash func()) {
	g := a
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	defer st.Close()
	name := "echo__" + shortID(s.ID)

	sid, initResult := mcpInit(t, g, "/mcp")
	var init struct {
		Capabilities struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call *struct{} `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
				List, Cancel *struct{}
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	json.Unmarshal(initResult, &init)
	if init.Capabilities.Tasks.Requests.Tools.Call == nil || init.Capabilities.Tasks.List == nil || init.Capabilities.Tasks.Cancel == nil {
		t.Fatalf("initialize declares no tasks capability: %s", initResult)
	}
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); {
		reply, _ := mcpRPC(t, g, "/mcp", sid, "tools/list", map[string]any{})
		json.Unmarshal(reply.Result, &list)
		for _, tool := range list.Tools {
			if tool.Name == name {
				found = true
				if tool.Execution.TaskSupport != "optional" {
					t.Fatalf("%s declares taskSupport %q, want optional", name, tool.Execution.TaskSupport)
				}
			}
		}
		if !found {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !found {
		t.Fatalf("%s not listed", name)
	}

	// Bad task params change nothing.
	for _, bad := range []any{"soon", map[string]any{"ttl": -1}, map[string]any{"ttl": 1.5}, map[string]any{"ttl": "60000"}} {
		reply, _ := mcpRPC(t, g, "/mcp", sid, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"text": "x"}, "task": bad})
		wantRPCError(t, "task "+mustJSON(t, bad), reply, -32602)
	}
	var calls struct {
		Calls []json.RawMessage `json:"calls"`
	}
	g.call("GET", "/v1/calls", testAgentKey, nil, 200, &calls)
	if len(calls.Calls) != 0 {
		t.Fatalf("refused task requests made %d calls", len(calls.Calls))
	}

	reply, _ := mcpRPC(t, g, "/mcp", sid, "tools/call", map[string]any{
		"name": name, "arguments": map[string]any{"text": "hi"}, "task": map[string]any{"ttl": 1e15}})
	var created struct {
		Task mcpTask `json:"task"`
	}
	if reply.Error != nil || json.Unmarshal(reply.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("task-augmented tools/call: %s %+v", reply.Result, reply.Error)
	}
	task := created.Task
	if task.Status != "working" || task.TTL != (2*time.Hour).Milliseconds() {
		t.Fatalf("created task = %+v, want working with the ttl capped at 2h", task)
	}
	if rec := mcpGetCall(t, g, task.TaskID); rec.Tool != "echo" || rec.SessionID != s.ID {
		t.Fatalf("the task's call = %+v", rec)
	}
	// Only /mcp sees it; unknown and malformed ids are the same error.
	other := "/mcp/sessions/" + s.ID
	for what, try := range map[string]struct {
		path   string
		params any
	}{
		"other route": {other, map[string]any{"taskId": task.TaskID}},
		"unknown id":  {"/mcp", map[string]any{"taskId": "0190f0f0-0000-7000-8000-000000000000"}},
		"bad id":      {"/mcp", map[string]any{"taskId": strings.Repeat("x", 5000)}},
		"no id":       {"/mcp", map[string]any{}},
		"id a number": {"/mcp", map[string]any{"taskId": 7}},
	} {
		reply, _ := mcpRPC(t, g, try.path, "", "tasks/get", try.params)
		wantRPCError(t, what, reply, -32602)
	}
	reply, _ = mcpRPC(t, g, other, "", "tasks/list", nil)
	if strings.Contains(string(reply.Result), task.TaskID) {
		t.Fatalf("another route lists the task: %s", reply.Result)
	}

	crash() // SIGKILL (then, on SQLite, the same database and port)
	g = b

	if status, body := g.answer(s, task.TaskID, map[string]any{"answer": 42}); status != 200 {
		t.Fatalf("REST answer after the restart: %d %v", status, body)
	}
	reply, _ = mcpRPC(t, g, "/mcp", "", "tasks/get", map[string]any{"taskId": task.TaskID})
	var got mcpTask
	if json.Unmarshal(reply.Result, &got); got.Status != "completed" || got.TaskID != task.TaskID || got.TTL != task.TTL {
		t.Fatalf("tasks/get after the restart: %s %+v", reply.Result, reply.Error)
	}
	reply, _ = mcpRPC(t, g, "/mcp", "", "tasks/result", map[string]any{"taskId": task.TaskID})
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		Meta              map[string]any `json:"_meta"`
	}
	if json.Unmarshal(reply.Result, &result); result.IsError || len(result.Content) != 1 || result.Content[0].Text != `{"answer":42}` {
		t.Fatalf("tasks/result: %s %+v", reply.Result, reply.Error)
	}
	if related, _ := result.Meta["io.modelcontextprotocol/related-task"].(map[string]any); related["taskId"] != task.TaskID {
		t.Fatalf("tasks/result's related-task: %v", result.Meta)
	}
	reply, _ = mcpRPC(t, g, "/mcp", "", "tasks/list", map[string]any{})
	if !strings.Contains(string(reply.Result), task.TaskID) {
		t.Fatalf("tasks/list: %s %+v", reply.Result, reply.Error)
	}
	reply, _ = mcpRPC(t, g, "/mcp", "", "tasks/cancel", map[string]any{"taskId": task.TaskID})
	wantRPCError(t, "cancel of an ended task", reply, -32602)
}

// mcpRPCModern posts one 2026-07-28 request (stateless: its _meta says
// the revision, the client and its capabilities, here the tasks
// extension) to path; name is the Mcp-Name header ("" for none).
func mcpRPCModern(t *testing.T, g *gateway, path, method, name string, params map[string]any) rpcReply {
	t.Helper()
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["io.modelcontextprotocol/protocolVersion"] = mcpStateless
	meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "tasks-test", "version": "1"}
	meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	params["_meta"] = meta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", g.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpStateless)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	data := buf.Bytes()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(rest)
				break
			}
		}
	}
	var reply rpcReply
	if err := json.Unmarshal(data, &reply); err != nil {
		t.Fatalf("%s: status %d, reply %q: %v", method, resp.StatusCode, data, err)
	}
	return reply
}

// Revision 2026-07-28's tasks extension: declared by server/discover; a
// tools/call declaring it becomes a task (resultType "task"); tasks/get
// gives the result inline once the REST client answered; tasks/update
// and the cancel of an ended task are refused, another route sees
// nothing, and tasks/result and tasks/list are not offered.
func TestMCPTaskExtension(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MCPTaskMaxTTL = time.Hour })
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	defer st.Close()
	name := "echo__" + shortID(s.ID)

	reply := mcpRPCModern(t, g, "/mcp", "server/discover", "", map[string]any{})
	var discovered struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(reply.Result, &discovered); discovered.Capabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("server/discover declares no tasks extension: %s %+v", reply.Result, reply.Error)
	}
	reply = mcpRPCModern(t, g, "/mcp", "tools/call", name, map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}})
	var created struct {
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
		TTLMs      int64  `json:"ttlMs"`
		ResultType string `json:"resultType"`
	}
	if json.Unmarshal(reply.Result, &created); created.ResultType != "task" || created.Status != "working" || created.TaskID == "" || created.TTLMs != time.Hour.Milliseconds() {
		t.Fatalf("tools/call: %s %+v", reply.Result, reply.Error)
	}
	get := func(path string) rpcReply {
		return mcpRPCModern(t, g, path, "tasks/get", created.TaskID, map[string]any{"taskId": created.TaskID})
	}
	wantRPCError(t, "another route's task", get("/mcp/sessions/"+s.ID), -32602)
	if status, body := g.answer(s, created.TaskID, "forty-two"); status != 200 {
		t.Fatalf("REST answer: %d %v", status, body)
	}
	var got struct {
		Status     string `json:"status"`
		ResultType string `json:"resultType"`
		Result     struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	reply = get("/mcp")
	if json.Unmarshal(reply.Result, &got); got.Status != "completed" || got.ResultType != "complete" || len(got.Result.Content) != 1 || got.Result.Content[0].Text != "forty-two" {
		t.Fatalf("tasks/get: %s %+v", reply.Result, reply.Error)
	}
	reply = mcpRPCModern(t, g, "/mcp", "tasks/update", created.TaskID, map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{}})
	wantRPCError(t, "tasks/update", reply, -32602)
	reply = mcpRPCModern(t, g, "/mcp", "tasks/cancel", created.TaskID, map[string]any{"taskId": created.TaskID})
	wantRPCError(t, "cancel of an ended task", reply, -32602)
	for _, method := range []string{"tasks/result", "tasks/list"} {
		if reply := mcpRPCModern(t, g, "/mcp", method, "", map[string]any{"taskId": created.TaskID}); reply.Error == nil {
			t.Fatalf("%s on 2026-07-28 answered %s", method, reply.Result)
		}
	}
}

// A task's result passes the same output_schema check as a plain
// tools/call: a client's output that does not match the tool's schema is
// an isError result with OUTPUT_INVALID, not the output.
func TestMCPTaskResultIsCheckedAgainstOutputSchema(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("tab")
	g.register(s, map[string]any{
		"name": "count", "description": "Count things",
		"parameters":    map[string]any{"type": "object"},
		"output_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}},
	})
	st := g.openStream(s, "")
	defer st.Close()
	name := "count__" + shortID(s.ID)

	reply := mcpRPCModern(t, g, "/mcp", "tools/call", name, map[string]any{"name": name, "arguments": map[string]any{}})
	var created struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(reply.Result, &created); created.TaskID == "" {
		t.Fatalf("tools/call: %s %+v", reply.Result, reply.Error)
	}
	if status, body := g.answer(s, created.TaskID, map[string]any{"n": "many"}); status != 200 {
		t.Fatalf("REST answer: %d %v", status, body)
	}
	var got struct {
		Status string `json:"status"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	reply = mcpRPCModern(t, g, "/mcp", "tasks/get", created.TaskID, map[string]any{"taskId": created.TaskID})
	if json.Unmarshal(reply.Result, &got); !got.Result.IsError || len(got.Result.Content) == 0 || !strings.Contains(got.Result.Content[0].Text, "OUTPUT_INVALID") {
		t.Fatalf("tasks/get of a task whose output breaks the tool's output_schema: %s %+v", reply.Result, reply.Error)
	}
}

// A task request written by a host into a tools/call's _meta (in a batch,
// which the task hook does not read: the SDK still takes batches at
// revisions before 2025-06-18) is not taken for the hook's: the call is a
// plain one, and no task is filed under the route, owner and ttl it names.
func TestMCPTaskRequestCannotBeForged(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	defer st.Close()
	name := "echo__" + shortID(s.ID)
	sid, _ := mcpInit(t, g, "/mcp")

	sum := sha256.Sum256([]byte("toolgate mcp task owner\x00" + testAgentKey))
	forged := fmt.Sprintf(`{"ttl":315360000000,"route":%q,"owner":%q}`, s.ID, hex.EncodeToString(sum[:16]))
	batch := fmt.Sprintf(`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":%q,"arguments":{"text":"y"},`+
		`"_meta":{"io.toolgate/timeout_ms":300,"io.toolgate/task_request":%s}}}]`, name, forged)
	req, _ := http.NewRequest("POST", g.URL+"/mcp", strings.NewReader(batch))
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	for _, path := range []string{"/mcp", "/mcp/sessions/" + s.ID} {
		reply, _ := mcpRPC(t, g, path, "", "tasks/list", map[string]any{})
		var list struct {
			Tasks []mcpTask `json:"tasks"`
		}
		if json.Unmarshal(reply.Result, &list); reply.Error != nil || len(list.Tasks) != 0 {
			t.Fatalf("tasks/list on %s after a forged task request: %s %+v", path, reply.Result, reply.Error)
		}
	}
}

// A task made on /mcp/sessions/{sid} outlives the client's session: once
// the session is closed (its route gone), tasks/get and tasks/result on
// that route still read it, for its ttl.
func TestMCPTaskOutlivesItsSessionRoute(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	path := "/mcp/sessions/" + s.ID
	sid, _ := mcpInit(t, g, path)
	reply, _ := mcpRPC(t, g, path, sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "task": map[string]any{}})
	var created struct {
		Task mcpTask `json:"task"`
	}
	if json.Unmarshal(reply.Result, &created); created.Task.TaskID == "" {
		t.Fatalf("tools/call as a task: %s %+v", reply.Result, reply.Error)
	}
	if status, body := g.answer(s, created.Task.TaskID, "forty-two"); status != 200 {
		t.Fatalf("REST answer: %d %v", status, body)
	}
	st.Close()
	g.call("DELETE", "/v1/sessions/"+s.ID, s.Token, nil, 200, nil)
	reply, _ = mcpRPC(t, g, path, "", "tasks/result", map[string]any{"taskId": created.Task.TaskID})
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(reply.Result, &result); reply.Error != nil || len(result.Content) == 0 || result.Content[0].Text != "forty-two" {
		t.Fatalf("tasks/result on the route of a closed session: %s %+v", reply.Result, reply.Error)
	}
}

// An idempotency key used again for a task on another route finds the
// first route's call: the host is refused with CONFLICT (it could never
// read that task), and the first task's call goes on.
func TestMCPTaskKeyUsedOnAnotherRouteConflicts(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	defer st.Close()
	path := "/mcp/sessions/" + s.ID
	sidA, _ := mcpInit(t, g, path)
	sidB, _ := mcpInit(t, g, "/mcp")
	meta := map[string]any{"io.toolgate/idempotency_key": "nightly-1"}
	reply, _ := mcpRPC(t, g, path, sidA, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "task": map[string]any{}, "_meta": meta})
	var first struct {
		Task mcpTask `json:"task"`
	}
	if json.Unmarshal(reply.Result, &first); first.Task.TaskID == "" {
		t.Fatalf("first task: %s %+v", reply.Result, reply.Error)
	}
	reply, _ = mcpRPC(t, g, "/mcp", sidB, "tools/call", map[string]any{"name": "echo__" + shortID(s.ID), "arguments": map[string]any{"text": "hi"}, "task": map[string]any{}, "_meta": meta})
	var again struct {
		Task    mcpTask `json:"task"`
		IsError bool    `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(reply.Result, &again); again.Task.TaskID != "" || !again.IsError || len(again.Content) == 0 || !strings.Contains(again.Content[0].Text, "CONFLICT") {
		t.Fatalf("the same key as a task on /mcp: %s %+v", reply.Result, reply.Error)
	}
	if status, body := g.answer(s, first.Task.TaskID, "forty-two"); status != 200 {
		t.Fatalf("the first task's call was not left running: %d %v", status, body)
	}
}

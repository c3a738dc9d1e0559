package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBuiltinCalls: built-in tools are listed with source builtin, are
// called through POST /v1/calls without session_id, and are stored as
// calls (session_id NULL) that the history — and the call_history tool —
// shows. A tool error is a failed call; arguments that do not fit the
// reflected schema are 422 and store nothing; no remote tool may take a
// built-in's name.
func TestBuiltinCalls(t *testing.T) {
	g := startGateway(t, nil)
	var tools struct {
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			ReadOnly   bool            `json:"read_only"`
			Source     struct {
				Kind string `json:"kind"`
			} `json:"source"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &tools)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "call_history,current_time,http_request,memory_read,memory_search,memory_write" {
		t.Fatalf("tools = %v", names)
	}
	for _, tool := range tools.Tools {
		// Every built-in only reads, but memory_write and http_request
		// (POST, DELETE).
		changes := tool.Name == "memory_write" || tool.Name == "http_request"
		if tool.Source.Kind != "builtin" || tool.ReadOnly == changes || strings.Contains(string(tool.Parameters), "$ref") {
			t.Fatalf("built-in tool = %+v %s", tool, tool.Parameters)
		}
	}
	if !strings.Contains(string(tools.Tools[1].Parameters), `"time_zone"`) {
		t.Fatalf("current_time schema = %s", tools.Tools[1].Parameters)
	}

	var tokyo callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "current_time", "args": map[string]any{"time_zone": "Asia/Tokyo"}}, 200, &tokyo)
	var out struct {
		TimeZone  string `json:"time_zone"`
		UTCOffset string `json:"utc_offset"`
	}
	if err := json.Unmarshal(tokyo.Output, &out); err != nil || tokyo.Status != "completed" || out.TimeZone != "Asia/Tokyo" || out.UTCOffset != "+09:00" || tokyo.Attempts != 1 {
		t.Fatalf("current_time = %+v %s", tokyo, tokyo.Output)
	}

	var bad callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "current_time", "args": map[string]any{"time_zone": "Mars/Olympus"}}, 200, &bad)
	if bad.Status != "failed" || bad.Error == nil || bad.Error.Code != "INVALID_ARGS" || !strings.Contains(bad.Error.Message, "Mars/Olympus") {
		t.Fatalf("bad zone = %+v", bad)
	}

	for _, args := range []any{map[string]any{"time_zone": 5}, map[string]any{"zone": "UTC"}, "[1]"} {
		status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "current_time", "args": args})
		if status != 422 || errorCode(body) != "INVALID_ARGS" {
			t.Fatalf("args %v: %d %s", args, status, body)
		}
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "no_such_tool"})
	if status != 404 || errorCode(body) != "TOOL_NOT_FOUND" {
		t.Fatalf("unknown built-in: %d %s", status, body)
	}

	var history callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "call_history", "args": map[string]any{"tool": "current_time"}}, 200, &history)
	var listed struct {
		Calls []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			SessionID string `json:"session_id"`
			ErrorCode string `json:"error_code"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(history.Output, &listed); err != nil || len(listed.Calls) != 2 ||
		listed.Calls[0].ID != bad.ID || listed.Calls[0].ErrorCode != "INVALID_ARGS" || listed.Calls[1].ID != tokyo.ID || listed.Calls[1].SessionID != "" {
		t.Fatalf("call_history = %s", history.Output)
	}

	var list struct {
		Calls []struct {
			Tool      string  `json:"tool"`
			SessionID *string `json:"session_id"`
		} `json:"calls"`
	}
	g.call("GET", "/v1/calls?tool=current_time", testAgentKey, nil, 200, &list)
	if len(list.Calls) != 2 || list.Calls[0].SessionID != nil {
		t.Fatalf("history of current_time = %+v", list.Calls)
	}
	var nulls int
	if err := g.db(t).Get(&nulls, `SELECT COUNT(*) FROM calls WHERE session_id IS NULL`); err != nil || nulls != 3 {
		t.Fatalf("built-in calls stored with session_id NULL: %d (%v)", nulls, err)
	}

	s := g.newSession("shadow")
	reply := g.register(s, map[string]any{"name": "current_time", "description": "my own clock"})
	rejected := reply["rejected"].([]any)
	if reply["registered"] != 0.0 || len(rejected) != 1 || rejected[0].(map[string]any)["code"] != "CONFLICT" {
		t.Fatalf("shadowing registration = %v", reply)
	}
}

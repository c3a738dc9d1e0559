package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// TestDisabledBuiltins: the built-in tools named in --disable-builtins are
// not listed and a call of one is 404 TOOL_NOT_FOUND, storing nothing; the
// others stay. A name that is no built-in tool stops the gateway from
// opening, naming the flag, the name and the tools there are.
func TestDisabledBuiltins(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.DisabledBuiltins = []string{"http_request", "memory_write"} })
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &tools)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "call_history,current_time,memory_read,memory_search" {
		t.Fatalf("built-ins listed: %s", got)
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": json.RawMessage(`{"method":"GET","url":"https://example.com/"}`)})
	if status != 404 || errorCode(body) != "TOOL_NOT_FOUND" {
		t.Fatalf("call of a disabled built-in: %d %s", status, body)
	}
	var stored int
	if err := g.db(t).Get(&stored, `SELECT COUNT(*) FROM calls`); err != nil || stored != 0 {
		t.Fatalf("calls stored: %d (%v)", stored, err)
	}

	cfg := server.ConfigForTest(t)
	cfg.DisabledBuiltins = []string{"http_requests"}
	srv, err := server.Open(context.Background(), cfg, nil)
	if err == nil || srv != nil || !strings.Contains(err.Error(), `--disable-builtins: there is no built-in tool "http_requests"; the built-in tools are call_history, current_time, http_request,`) {
		t.Fatalf("Open = %v, %v", srv, err)
	}
}

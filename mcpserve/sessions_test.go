package mcpserve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpserve"
)

// post sends one JSON-RPC message to url with the agent key and headers.
func post(t *testing.T, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+agentKey)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Stateful MCP sessions are bounded, over every route: past MaxSessions a
// new one is refused with 503 and Retry-After, until one ends; the
// stateless revision, which keeps no session, is served all along.
func TestStatefulSessionsBounded(t *testing.T) {
	f := newFakeEngine()
	f.setSession(sessionA, tool("echo"))
	_, url := serve(t, f, mcpserve.Options{MaxSessions: 2})
	first := post(t, url+"/mcp", initialize, nil)
	second := post(t, url+"/mcp/sessions/"+sessionA, initialize, nil)
	if first.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("first two sessions: %d %d", first.StatusCode, second.StatusCode)
	}
	third := post(t, url+"/mcp", initialize, nil)
	if third.StatusCode != 503 || third.Header.Get("Retry-After") == "" {
		t.Errorf("a third session: %d, Retry-After %q; want 503 with Retry-After", third.StatusCode, third.Header.Get("Retry-After"))
	}
	// A request of an existing session is served.
	sid := first.Header.Get("Mcp-Session-Id")
	if resp := post(t, url+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}); resp.StatusCode != 200 {
		t.Errorf("a request of a live session: %d", resp.StatusCode)
	}
	cs := connect(t, url+"/mcp", "2026-07-28")
	if got := names(t, cs); len(got) != 1 {
		t.Errorf("stateless tools/list at the bound: %v", got)
	}

	req, _ := http.NewRequest("DELETE", url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if again := post(t, url+"/mcp", initialize, nil); again.StatusCode != 200 {
		t.Errorf("a session once one ended: %d", again.StatusCode)
	}
}

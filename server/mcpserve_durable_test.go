package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/server"
)

// Durable MCP sessions (2025-11-25, Mcp-Session-Id): kept in the store,
// so they outlive a restart and are valid on every node; their streams
// carry event ids, and a GET with Last-Event-ID replays what was missed,
// including the result of a tools/call answered while no one listened.

// postUntilEventID sends a tools/call on raw and reads its reply up to the
// first event id (the priming event), then drops the connection; it
// returns that id.
func postUntilEventID(t *testing.T, raw *rawMCP, body string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := raw.send(ctx, "POST", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("tools/call: %d %s", resp.StatusCode, b)
	}
	lines := sseLines(resp.Body)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the reply ended before an event id")
			}
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				return id
			}
		case <-deadline:
			t.Fatal("no event id on the reply within 10s")
		}
	}
}

// resume sends GET with Last-Event-ID and returns the JSON-RPC response
// to request id it replays.
func resume(t *testing.T, raw *rawMCP, lastEventID string, id int) map[string]any {
	t.Helper()
	resp, err := raw.send(context.Background(), "GET", "", http.Header{"Last-Event-Id": {lastEventID}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET with Last-Event-ID %s: %d %s", lastEventID, resp.StatusCode, b)
	}
	lines := sseLines(resp.Body)
	for {
		msg := nextMessage(t, lines, 15*time.Second)
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("replayed %s: %v", msg, err)
		}
		if m["id"] == float64(id) {
			return m
		}
	}
}

// callIDOf returns the toolgate call id of a tools/call response.
func callIDOf(t *testing.T, m map[string]any) string {
	t.Helper()
	result, _ := m["result"].(map[string]any)
	meta, _ := result["_meta"].(map[string]any)
	id, _ := meta["io.toolgate/call_id"].(string)
	if id == "" {
		t.Fatalf("no call id in %v", m)
	}
	return id
}

// A host whose stream dropped while its tools/call waited resumes it
// (GET with Last-Event-ID) after the gateway restarted on the same
// database: it gets the call's result, answered by the client after the
// restart; its session id still works; and the same tools/call sent again
// in the session finds the same call (one call in all).
func TestMCPSessionSurvivesRestart(t *testing.T) {
	cfg := server.ConfigForTest(t)
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	s := g.newSession("restart")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	tool := "echo__" + shortID(s.ID)
	lastEventID := postUntilEventID(t, raw, callBody(5, tool, `{"text":"hi"}`))
	req := client.nextOfType("tool_call_request")
	client.Close()
	stop()

	srv, _ = server.StartForTest(t, cfg)
	g = &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	raw.url = g.URL + "/mcp"
	client = g.openStream(s, req.ID)
	client.nextOfType("ready")
	callID := client.nextOfType("tool_call_request").Data["id"].(string)
	if status, _ := g.answer(s, callID, "hello"); status != 200 {
		t.Fatalf("answer: %d", status)
	}
	got := resume(t, raw, lastEventID, 5)
	if callIDOf(t, got) != callID || !strings.Contains(mustJSON(t, got), `hello`) {
		t.Fatalf("resumed after the restart: %v, want the result of call %s", got, callID)
	}
	// The session id still works.
	resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("tools/list on the session after the restart: %d", resp.StatusCode)
	}
	// The same request again: the same call, not a second one.
	again := raw.mustSend("POST", callBody(5, tool, `{"text":"hi"}`))
	m := nextJSONRPC(t, again, 5)
	if callIDOf(t, m) != callID {
		t.Fatalf("the re-sent tools/call made call %s, want %s", callIDOf(t, m), callID)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM calls`); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
}

// nextJSONRPC reads a reply's stream up to the response to request id.
func nextJSONRPC(t *testing.T, resp *http.Response, id int) map[string]any {
	t.Helper()
	lines := sseLines(resp.Body)
	for {
		msg := nextMessage(t, lines, 10*time.Second)
		var m map[string]any
		if json.Unmarshal(msg, &m) == nil && m["id"] == float64(id) {
			return m
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A host that drops the POST of a tools/call does not cancel the call
// (MCP: a disconnection is not a cancellation): the client answers, and
// the host resuming the stream gets the result.
func TestMCPDroppedPostResumes(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("drop")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	lastEventID := postUntilEventID(t, raw, callBody(3, "echo__"+shortID(s.ID), `{"text":"x"}`))
	callID := client.nextOfType("tool_call_request").Data["id"].(string)
	time.Sleep(100 * time.Millisecond) // the POST's end reaches the gateway
	if status, _ := g.answer(s, callID, "late"); status != 200 {
		t.Fatalf("answer after the drop: %d (was the call cancelled?)", status)
	}
	got := resume(t, raw, lastEventID, 3)
	if callIDOf(t, got) != callID || !strings.Contains(mustJSON(t, got), "late") {
		t.Fatalf("resumed: %v", got)
	}
}

// DELETE ends a session (404 after, on every request); a session idle
// longer than --mcp-session-idle expires.
func TestMCPSessionDeleteAndIdle(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MCPSessionIdle = time.Second })
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	if resp := raw.mustSend("DELETE", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request after DELETE: %d, want 404", resp.StatusCode)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM mcp_sessions`); n != 0 {
		t.Fatalf("%d sessions kept after DELETE", n)
	}

	idle := newRawMCP(t, g.URL+"/mcp")
	idle.initialize()
	if resp := idle.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Fatalf("a request within the idle time: %d", resp.StatusCode)
	}
	time.Sleep(1500 * time.Millisecond)
	if resp := idle.mustSend("POST", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request after the idle time: %d, want 404", resp.StatusCode)
	}
}

// The sessions one key holds alive are bounded, over restarts (they are
// counted in the store): past the bound a new one is 503
// TOO_MANY_MCP_SESSIONS, until one ends.
func TestMCPSessionsBoundedPerKey(t *testing.T) {
	cfg := server.ConfigForTest(t)
	cfg.MaxMCPSessionsPerKey = 2
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	first := newRawMCP(t, g.URL+"/mcp")
	first.initialize()
	newRawMCP(t, g.URL+"/mcp").initialize()
	stop()
	srv, _ = server.StartForTest(t, cfg)
	g = &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	third := newRawMCP(t, g.URL+"/mcp")
	resp := third.mustSend("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(body), "TOO_MANY_MCP_SESSIONS") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third session: %d %s", resp.StatusCode, body)
	}
	first.url = g.URL + "/mcp"
	if resp := first.mustSend("DELETE", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE after the restart: %d", resp.StatusCode)
	}
	newRawMCP(t, g.URL+"/mcp").initialize()
}

// On PostgreSQL a session set up through one node is used through another.
func TestMCPSessionSharedByNodes(t *testing.T) {
	nodes := clusterNodes(t, 2, nil)
	raw := newRawMCP(t, nodes[0].URL+"/mcp")
	raw.initialize()
	raw.url = nodes[1].URL + "/mcp"
	resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("tools/list through the other node: %d", resp.StatusCode)
	}
	if m := nextJSONRPC(t, resp, 2); m["result"] == nil {
		t.Fatalf("tools/list through the other node: %v", m)
	}
	if resp := raw.mustSend("DELETE", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE through the other node: %d", resp.StatusCode)
	}
	raw.url = nodes[0].URL + "/mcp"
	if resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the first node after DELETE on the other: %d, want 404", resp.StatusCode)
	}
}

// Bad session ids and event ids are refused and change nothing: an
// unknown session id is 404, one of /mcp on a session's route is 404, a
// malformed Last-Event-ID or one of a stream never kept is 400; the
// session still works after them.
func TestMCPSessionBadIDs(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("bad")
	g.register(s, echoTool)
	client := g.openStream(s, "")
	client.nextOfType("ready")
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	sessions := g.count(t, `SELECT COUNT(*) FROM mcp_sessions`)

	unknown := *raw
	unknown.session = "NOSUCHSESSION" + strings.Repeat("X", 500)
	if resp := unknown.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown session id: %d, want 404", resp.StatusCode)
	}
	other := *raw
	other.url = g.URL + "/mcp/sessions/" + s.ID
	if resp := other.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a session id of /mcp on a session's route: %d, want 404", resp.StatusCode)
	}
	for _, id := range []string{"garbage", "NOSUCHSTREAM_3"} {
		resp, err := raw.send(context.Background(), "GET", "", http.Header{"Last-Event-Id": {id}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %q: %d, want 400", id, resp.StatusCode)
		}
	}
	if n := g.count(t, `SELECT COUNT(*) FROM mcp_sessions`); n != sessions {
		t.Errorf("%d sessions after bad requests, want %d", n, sessions)
	}
	if resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Errorf("the session after bad requests: %d", resp.StatusCode)
	}
}

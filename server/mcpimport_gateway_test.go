package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcpimport"
	"github.com/toolgate/toolgate/server"
)

// importGateway starts a gateway importing the MCP servers given.
func importGateway(t *testing.T, servers ...mcpimport.Config) *gateway {
	t.Helper()
	return startGateway(t, func(c *serverConfig) { c.MCPServers, c.MCPOptions = servers, fastMCPOptions })
}

// fastMCPOptions notice a server gone, and reconnect, within a fraction of
// a second.
var fastMCPOptions = mcpimport.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, CheckInterval: 200 * time.Millisecond}

// TestMCPImportThroughGateway: a Go SDK server's tools are listed by GET
// /api/tools as gosdk__tool with source {kind: mcp, server: gosdk}; one is
// called with POST /v1/calls without a session_id and shows in the
// history; no client may register a tool under the server's prefix; a
// call cancelled through the gateway is cancelled at the server; the
// server stopped, its tools show offline and a call to one is refused at
// once with 503 TOOL_OFFLINE, stored nowhere.
func TestMCPImportThroughGateway(t *testing.T) {
	mcpServer := startGoMCPServer(t)
	g := importGateway(t, mcpimport.Config{Name: "gosdk", Target: mcpServer.URL})

	echo := g.waitToolOnline(t, "gosdk__echo", true)
	if echo.Source.Kind != "mcp" || echo.Source.Server != "gosdk" || !echo.ReadOnly {
		t.Fatalf("gosdk__echo listed as %+v", echo)
	}
	if _, ok := g.apiTools()["gosdk__slow"]; !ok {
		t.Fatal("gosdk__slow is not listed")
	}

	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "hi"}}, 200, &rec)
	if rec.Status != "completed" || string(rec.Output) != `"echo: hi"` {
		t.Fatalf("call = %+v", rec)
	}
	history := g.callsOf("gosdk__echo")
	if len(history) != 1 || history[0].ID != rec.ID || history[0].Status != "completed" {
		t.Fatalf("history = %+v", history)
	}

	s := g.newSession("tab")
	reply := g.register(s, map[string]any{"name": "gosdk__other", "description": "an impostor"})
	rejected, _ := reply["rejected"].([]any)
	if reply["registered"] != 0.0 || len(rejected) != 1 || rejected[0].(map[string]any)["code"] != "CONFLICT" {
		t.Fatalf("a client registering gosdk__other: %v", reply)
	}

	slow := g.startCallBuiltin(t, "gosdk__slow", map[string]any{}, 202)
	// Cancelled once the server runs it (a call cancelled before its
	// execution starts is never sent to the server at all).
	select {
	case <-mcpServer.slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not reach the server")
	}
	g.call("POST", "/v1/calls/"+slow.ID+"/cancel", testAgentKey, map[string]any{"reason": "enough"}, 200, nil)
	select {
	case <-mcpServer.slowCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler of the cancelled call was not cancelled")
	}
	if got := g.waitCall(slow.ID); got.Status != "cancelled" {
		t.Fatalf("cancelled call = %+v", got)
	}

	watched := make(chan string, 16)
	stopWatch := g.Server.Engine.Tools.WatchTools(func(sid string) {
		select {
		case watched <- sid:
		default:
		}
	})
	defer stopWatch()
	mcpServer.stop()
	g.waitToolOnline(t, "gosdk__echo", false)
	select {
	case sid := <-watched:
		if sid != "" {
			t.Errorf("the tool watchers were told of session %q, want \"\" (the gateway's own tools)", sid)
		}
	case <-time.After(5 * time.Second):
		t.Error("the tool watchers were not told that the server went offline")
	}
	started := time.Now()
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "x"}})
	if status != 503 || !strings.Contains(string(body), `"TOOL_OFFLINE"`) || !strings.Contains(string(body), "MCP server gosdk is offline") {
		t.Fatalf("a call while the server is down: %d %s", status, body)
	}
	if d := time.Since(started); d > 2*time.Second {
		t.Errorf("the offline call took %s", d)
	}
	if n := len(g.callsOf("gosdk__echo")); n != 1 {
		t.Fatalf("%d gosdk__echo calls in the history, want the one before the server stopped", n)
	}
}

// TestMCPImportOpenCallAtRestart: a call of an imported tool still open
// when the gateway stops is not run again by the next process (its tool
// is not listed yet when open calls resume): the deadline queue ends it
// timed_out.
func TestMCPImportOpenCallAtRestart(t *testing.T) {
	mcpServer := startGoMCPServer(t)
	cfg := server.ConfigForTest(t)
	cfg.MCPServers, cfg.MCPOptions = []mcpimport.Config{{Name: "gosdk", Target: mcpServer.URL}}, fastMCPOptions
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	g.waitToolOnline(t, "gosdk__slow", true)
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__slow", "args": map[string]any{}, "wait": false, "timeout_ms": 1500}, 202, &rec)
	select {
	case <-time.After(100 * time.Millisecond): // the call reaches the server, or not: it is open either way
	case <-mcpServer.slowCancelled:
		t.Fatal("the slow call ended early")
	}
	stop()

	srv2, _ := server.StartForTest(t, cfg)
	g2 := &gateway{t: t, URL: srv2.URL(), Server: srv2, DBPath: cfg.DBPath}
	got := g2.waitCall(rec.ID)
	if got.Status != "timed_out" || got.Error == nil || got.Error.Code != "TIMEOUT" {
		t.Fatalf("the open call after the restart = %+v", got)
	}
}

// everythingBin names the npm package @modelcontextprotocol/server-everything's
// program (web/e2e/node_modules/.bin/mcp-server-everything); the tests
// that run it skip without it (web/e2e/run.sh sets it).
func everythingBin(t *testing.T) string {
	bin := os.Getenv("TOOLGATE_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("TOOLGATE_MCP_EVERYTHING (the path of node_modules/.bin/mcp-server-everything) is not set")
	}
	return bin
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestMCPImportEverything: the official reference server
// (@modelcontextprotocol/server-everything) over stdio: its tools listed as
// everything__echo and the rest, one called through the gateway and kept in
// the history, and its progress notifications stored on the call.
func TestMCPImportEverything(t *testing.T) {
	bin := everythingBin(t)
	g := importGateway(t, mcpimport.Config{Name: "everything", Target: shellQuote(bin) + " stdio"})
	echo := g.waitToolOnline(t, "everything__echo", true)
	if echo.Source.Kind != "mcp" || echo.Source.Server != "everything" {
		t.Fatalf("everything__echo listed as %+v", echo)
	}
	tools := g.apiTools()
	for _, name := range []string{"everything__get-sum", "everything__trigger-long-running-operation"} {
		if !tools[name].Online {
			t.Errorf("%s is not listed online: %+v", name, tools[name])
		}
	}

	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "everything__echo", "args": map[string]any{"message": "hello"}}, 200, &rec)
	if rec.Status != "completed" || string(rec.Output) != `"Echo: hello"` {
		t.Fatalf("everything__echo = %+v", rec)
	}
	if history := g.callsOf("everything__echo"); len(history) != 1 || history[0].ID != rec.ID {
		t.Fatalf("history = %+v", history)
	}

	var long struct {
		callRecord
		Progress json.RawMessage `json:"progress"`
	}
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "everything__trigger-long-running-operation",
		"args": map[string]any{"duration": 0.4, "steps": 2}}, 200, &long)
	if long.Status != "completed" || !strings.Contains(string(long.Output), "Steps: 2") {
		t.Fatalf("long-running operation = %+v", long)
	}
	// The server notifies step 1, then step 2 just before its result; the
	// SDK may hand the gateway that last one after the result.
	if p := string(long.Progress); p != `{"progress":2,"total":2}` && p != `{"progress":1,"total":2}` {
		t.Errorf("the call's progress = %s, want the server's notification of step 1 or 2", long.Progress)
	}
}

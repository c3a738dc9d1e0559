package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcpimport"
)

// startSlowListingMCPServer is startGoMCPServer whose tools/list requests
// wait until release is called: listAsked is told of each one as it
// arrives. So a gateway importing it has connected, but has not listed
// its tools, until then.
func startSlowListingMCPServer(t *testing.T) (srv *goMCPServer, listAsked <-chan struct{}, release func()) {
	t.Helper()
	asked, gate := make(chan struct{}, 16), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	srv = startGoMCPServerWith(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				select {
				case asked <- struct{}{}:
				default:
				}
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	})
	return srv, asked, release
}

// postCall makes POST /v1/calls (waiting for the call's end) from any
// goroutine, returning the status and body.
func postCall(url string, body map[string]any) (int, []byte, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url+"/v1/calls", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// TestMCPImportCallBeforeFirstListing: right after the gateway starts, a
// call of an imported server's tool made while the server has not listed
// its tools yet is not refused as unknown (TOOL_NOT_FOUND): it waits for
// the listing and completes; one whose timeout passes first is refused
// with TOOL_OFFLINE (retryable), stored nowhere.
func TestMCPImportCallBeforeFirstListing(t *testing.T) {
	mcpServer, listAsked, release := startSlowListingMCPServer(t)
	g := importGateway(t, mcpimport.Config{Name: "gosdk", Target: mcpServer.URL})
	select {
	case <-listAsked:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not ask the server for its tools")
	}

	status, body, err := postCall(g.URL, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "early"}, "timeout_ms": 300})
	if err != nil || status != 503 || !strings.Contains(string(body), `"TOOL_OFFLINE"`) || !strings.Contains(string(body), "MCP server gosdk is offline") {
		t.Fatalf("a call whose timeout passes before the listing: %d %s %v", status, body, err)
	}

	type reply struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan reply, 1)
	go func() {
		status, body, err := postCall(g.URL, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "hi"}, "timeout_ms": 20000})
		done <- reply{status, body, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the call ended before the server listed its tools: %d %s %v", r.status, r.body, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	var r reply
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end after the server listed its tools")
	}
	var rec callRecord
	if r.err != nil || r.status != 200 || json.Unmarshal(r.body, &rec) != nil || rec.Status != "completed" || string(rec.Output) != `"echo: hi"` {
		t.Fatalf("the call made before the listing: %d %s %v", r.status, r.body, r.err)
	}
	if history := g.callsOf("gosdk__echo"); len(history) != 1 || history[0].ID != rec.ID {
		t.Fatalf("history = %+v, want only the completed call", history)
	}
	status, body, err = postCall(g.URL, map[string]any{"tool": "gosdk__nosuch", "args": map[string]any{}})
	if err != nil || status != 404 || !strings.Contains(string(body), `"TOOL_NOT_FOUND"`) {
		t.Fatalf("a tool the listed server does not have: %d %s %v", status, body, err)
	}
}

// TestMCPImportRunBeforeFirstListing: a run whose step calls an imported
// server's tool before the server has listed its tools (as a run resumed
// at start does) gets the tool's answer once it is listed, not
// TOOL_NOT_FOUND.
func TestMCPImportRunBeforeFirstListing(t *testing.T) {
	mcpServer, listAsked, release := startSlowListingMCPServer(t)
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "gosdk__echo", `{"text":"from the run"}`)))
	g := modelGateway(t, m, func(c *serverConfig) {
		c.MCPServers, c.MCPOptions = []mcpimport.Config{{Name: "gosdk", Target: mcpServer.URL}}, fastMCPOptions
	})
	select {
	case <-listAsked:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not ask the server for its tools")
	}
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "use the imported tool", "wait": false}, 202, &run)
	time.AfterFunc(300*time.Millisecond, release)
	for deadline := time.Now().Add(20 * time.Second); ; {
		stored := g.getRun(run.ID)
		if stored.Status != "running" {
			run = stored
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still running: %+v", stored)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if run.Status != "finished" || !strings.Contains(run.Output, "echo: from the run") || len(run.Calls) != 1 || run.Calls[0].Status != "completed" {
		t.Fatalf("run = %+v", run)
	}
}

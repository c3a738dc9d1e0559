package server_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// initializeBody is a 2025-11-25 initialize request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Without the agent key, or with another secret, /mcp answers 401 with
// WWW-Authenticate: Bearer (and /mcp/sessions/{sid} alike).
func TestMCPRequiresTheAgentKey(t *testing.T) {
	g := startGateway(t, nil)
	for _, key := range []string{"", "tgs_not_the_key"} {
		for _, path := range []string{"/mcp", "/mcp/sessions/019a0000-0000-7000-8000-000000000000"} {
			raw := newRawMCP(t, g.URL+path)
			raw.key = key
			resp := raw.mustSend("POST", initializeBody)
			if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with key %q: %d, WWW-Authenticate %q", path, key, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
}

// A request with an Origin that is neither the gateway's own nor allowed
// is refused with 403; the gateway's own origin and an allowed one are
// served, and a browser host's preflight may send MCP's headers.
func TestMCPOrigin(t *testing.T) {
	g := startGateway(t, func(cfg *server.Config) { cfg.AllowedOrigins = []string{"https://app.example"} })
	cases := []struct {
		origin string
		status int
	}{
		{"https://evil.example", 403},
		{"null", 403},
		{g.URL, 200},
		{"https://app.example", 200},
		{"", 200},
	}
	for _, c := range cases {
		raw := newRawMCP(t, g.URL+"/mcp")
		var extra http.Header
		if c.origin != "" {
			extra = http.Header{"Origin": {c.origin}}
		}
		resp, err := raw.send(context.Background(), "POST", initializeBody, extra)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Origin %q: %d, want %d", c.origin, resp.StatusCode, c.status)
		}
		if c.origin == "https://app.example" && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
			t.Errorf("Mcp-Session-Id not exposed to an allowed origin: %q", resp.Header.Get("Access-Control-Expose-Headers"))
		}
	}

	req, _ := http.NewRequest("OPTIONS", g.URL+"/mcp", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version,mcp-session-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	if resp.StatusCode != 200 || !strings.Contains(allowed, "mcp-protocol-version") || !strings.Contains(allowed, "mcp-session-id") {
		t.Errorf("preflight: %d, Access-Control-Allow-Headers %q", resp.StatusCode, allowed)
	}
}

// The gateway's body limit applies to /mcp.
func TestMCPBodyLimit(t *testing.T) {
	g := startGateway(t, func(cfg *server.Config) { cfg.MaxBodyBytes = 2048 })
	raw := newRawMCP(t, g.URL+"/mcp")
	big := strings.Replace(initializeBody, `"name":"raw"`, `"name":"`+strings.Repeat("x", 4096)+`"`, 1)
	if resp := raw.mustSend("POST", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d, want 413", resp.StatusCode)
	}
	if resp := raw.mustSend("POST", initializeBody); resp.StatusCode != 200 {
		t.Errorf("a body within the limit: %d, want 200", resp.StatusCode)
	}
}

// A call that takes long gets its reply's header at once and a keep-alive
// comment on its stream each quiet heartbeat, with X-Accel-Buffering: no
// so that nginx passes them on.
func TestMCPKeepAliveOnASlowCall(t *testing.T) {
	g := startGateway(t, nil) // heartbeat 200 ms
	c, calls := waitTool(t, g)
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := raw.send(ctx, "POST", callBody(2, "wait__"+shortID(c.SessionID()), `{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	call := receivedCall(t, calls)
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers: Content-Type %q, X-Accel-Buffering %q", resp.Header.Get("Content-Type"), resp.Header.Get("X-Accel-Buffering"))
	}
	lines := sseLines(resp.Body)
	comments := 0
	deadline := time.After(10 * time.Second)
	for comments < 2 {
		select {
		case line := <-lines:
			if line == ": keep-alive" {
				comments++
			} else if line != "" && line != "event: prime" && line != "data: " && !strings.HasPrefix(line, "id: ") { // the priming event
				t.Fatalf("unexpected line on the quiet stream: %q", line)
			}
		case <-deadline:
			t.Fatalf("%d keep-alive comments in 10s", comments)
		}
	}
	raw.mustSend("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	checkCancelled(t, g, call)
}

// headerRecorder is bearer that keeps the response headers of each
// tools/call.
type headerRecorder struct {
	bearer
	mu    sync.Mutex
	calls []http.Header
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	resp, err := h.bearer.RoundTrip(r)
	if err == nil && strings.Contains(string(body), `"tools/call"`) {
		h.mu.Lock()
		h.calls = append(h.calls, resp.Header.Clone())
		h.mu.Unlock()
	}
	return resp, err
}

// On 2026-07-28 too, a call's streamed reply carries X-Accel-Buffering: no.
func TestMCPStreamedReplyHeaderStateless(t *testing.T) {
	g := startGateway(t, nil)
	c := connectClient(t, g, "Chrome", echoHandler, mcpEchoTool)
	rec := &headerRecorder{bearer: bearer{testAgentKey}}
	client := mcp.NewClient(&mcp.Implementation{Name: "recorder", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp", HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	name := "echo__" + shortID(c.SessionID())
	testwait.Until(t, 10*time.Second, "the tool listed", func() bool { return slices.Contains(mcpToolNames(t, cs), name) })
	if _, err := mcpCall(t, cs, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 1 || rec.calls[0].Get("X-Accel-Buffering") != "no" || rec.calls[0].Get("Content-Type") != "text/event-stream" {
		t.Errorf("tools/call replies' headers: %v", rec.calls)
	}
}

// A client tool whose schema the MCP SDK refuses (it would panic in
// Server.AddTool) is left out of the MCP listings; the gateway lives on
// and lists the session's other tools.
func TestMCPSchemaTheSDKRefuses(t *testing.T) {
	g := startGateway(t, nil)
	bad := toolSpec{name: "bad", description: "x-mcp-header on an object",
		parameters: `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`}
	c := connectClient(t, g, "Chrome", echoHandler, bad, mcpEchoTool)
	h := shortID(c.SessionID())
	cs := mcpConnect(t, g, "/mcp", mcpStateless, nil)
	testwait.Until(t, 10*time.Second, "the good tool listed", func() bool { return slices.Contains(mcpToolNames(t, cs), "echo__"+h) })
	if names := mcpToolNames(t, cs); slices.Contains(names, "bad__"+h) {
		t.Errorf("the refused tool is listed: %v", names)
	}
	own := mcpConnect(t, g, "/mcp/sessions/"+c.SessionID(), mcpLegacy, nil)
	if names := mcpToolNames(t, own); !slices.Equal(names, []string{"echo"}) {
		t.Errorf("the session's route lists %v, want [echo]", names)
	}
	if status, body := g.do("GET", "/healthz", "", nil); status != 200 {
		t.Errorf("healthz: %d %s", status, body)
	}
}

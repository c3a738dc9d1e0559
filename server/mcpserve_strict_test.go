package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/server"
)

// TestMCPBodyIsStrictJSON: an MCP request body is held to what the
// gateway's own bodies are held to, before the MCP SDK reads it. A member
// named twice anywhere (the SDK keeps the last: {"name":"a","name":"b"}
// called b, where a proxy or a log reads a call of a), in params, in the
// JSON-RPC envelope or in a batch, is refused 400 with a JSON-RPC error
// naming it, and no call is made; a body that passes is served as before,
// and one past --max-body-bytes is still the SDK's to refuse.
func TestMCPBodyIsStrictJSON(t *testing.T) {
	g := startGateway(t, func(cfg *server.Config) { cfg.MaxBodyBytes = 4096 })
	s := g.newSession("phone")
	g.register(s, map[string]any{"name": "a", "description": "a", "parameters": map[string]any{"type": "object"}})
	g.register(s, map[string]any{"name": "b", "description": "b", "parameters": map[string]any{"type": "object"}})
	a, b := "a__"+shortID(s.ID), "b__"+shortID(s.ID)
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + a + `","name":"` + b + `","arguments":{}}}`,
			`the body names the member \"name\" twice in the object at /params`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","method":"tools/list","params":{"name":"` + b + `","arguments":{}}}`,
			`the body names the member \"method\" twice in the top-level object`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + b + `","arguments":{},"_meta":{"k":1,"k":2}}}`,
			`twice in the object at /params/_meta`},
		{"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"" + b + "\xff\",\"arguments\":{}}}",
			`not valid UTF-8`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := raw.send(ctx, "POST", c.body, nil)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", c.body, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), c.want) ||
			!strings.Contains(string(body), `"code":-32600`) || !strings.Contains(string(body), `"jsonrpc":"2.0"`) {
			t.Errorf("%s: %d %s; want 400 with a JSON-RPC error and %s", c.body, resp.StatusCode, body, c.want)
		}
	}
	for _, tool := range []string{"a", "b"} {
		if calls := g.callsOf(tool); len(calls) != 0 {
			t.Fatalf("calls of %s after refused MCP bodies: %+v", tool, calls)
		}
	}
	// A body that passes is served, read whole by the SDK.
	if resp := raw.mustSend("POST", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d", resp.StatusCode)
	}
	msg := nextMessage(t, sseLines(raw.mustSend("POST", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`).Body), 10*time.Second)
	if !strings.Contains(string(msg), a) {
		t.Fatalf("tools/list: %s", msg)
	}
	// Past the limit: the SDK's refusal, as before.
	big := `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"x":"` + strings.Repeat("x", 5000) + `","x":1}}}`
	if resp := raw.mustSend("POST", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body past the limit: %d", resp.StatusCode)
	}
}

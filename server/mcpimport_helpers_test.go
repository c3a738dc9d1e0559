package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
)

// goMCPServer is an MCP server of the Go SDK served over Streamable HTTP
// (the stateless 2026-07-28 revision, and 2025-11-25 with sessions) on a
// loopback port, which a test can stop. Its tools: echo ({text} → "echo:
// TEXT"), and slow, which waits until its call is cancelled (its start
// reported on slowStarted, its cancellation on slowCancelled).
type goMCPServer struct {
	URL           string
	slowStarted   chan struct{}
	slowCancelled chan struct{}

	mu sync.Mutex
	hs *http.Server
}

func startGoMCPServer(t *testing.T) *goMCPServer {
	t.Helper()
	return startGoMCPServerWith(t, nil)
}

// startGoMCPServerWith is startGoMCPServer with its HTTP handler passed
// through wrap (when not nil).
func startGoMCPServerWith(t *testing.T, wrap func(http.Handler) http.Handler) *goMCPServer {
	t.Helper()
	g := &goMCPServer{slowStarted: make(chan struct{}, 4), slowCancelled: make(chan struct{}, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: "go-test-server", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + args.Text}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Waits until cancelled.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g.slowStarted <- struct{}{}
			<-ctx.Done()
			g.slowCancelled <- struct{}{}
			return nil, ctx.Err()
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.URL = "http://" + ln.Addr().String() + "/mcp"
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	if wrap != nil {
		h = wrap(h)
	}
	g.hs = &http.Server{Handler: h}
	go g.hs.Serve(ln)
	t.Cleanup(g.stop)
	return g
}

// stop closes the listener and every connection at once.
func (g *goMCPServer) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hs.Close()
}

// apiTool is a tool as GET /api/tools lists it.
type apiTool struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"read_only"`
	Online   bool   `json:"online"`
	Presence string `json:"presence"`
	Source   struct {
		Kind   string `json:"kind"`
		Server string `json:"server"`
	} `json:"source"`
}

// apiTools returns GET /api/tools's first page, by name.
func (g *gateway) apiTools() map[string]apiTool {
	g.t.Helper()
	var reply struct{ Tools []apiTool }
	g.call("GET", "/api/tools?limit=500", testAgentKey, nil, 200, &reply)
	out := map[string]apiTool{}
	for _, tool := range reply.Tools {
		out[tool.Name] = tool
	}
	return out
}

// waitToolOnline waits until GET /api/tools shows the tool with that
// online state.
func (g *gateway) waitToolOnline(t *testing.T, name string, online bool) apiTool {
	t.Helper()
	var tool apiTool
	testwait.Until(t, 20*time.Second, name+" listed", func() bool {
		var ok bool
		tool, ok = g.apiTools()[name]
		return ok && tool.Online == online
	})
	return tool
}

// callsOf returns GET /v1/calls?tool=…, newest first.
func (g *gateway) callsOf(tool string) []callRecord {
	g.t.Helper()
	var reply struct{ Calls []callRecord }
	g.call("GET", "/v1/calls?tool="+tool, testAgentKey, nil, 200, &reply)
	return reply.Calls
}

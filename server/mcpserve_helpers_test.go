package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// The two protocol revisions /mcp serves.
const (
	mcpStateless = "2026-07-28" // no sessions; the Go SDK client's default
	mcpLegacy    = "2025-11-25" // initialize, Mcp-Session-Id, the GET stream
)

// bearer is an http.RoundTripper that adds the agent key to each request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects the official Go SDK client to an MCP route of g
// ("/mcp", "/mcp/sessions/{sid}") speaking revision; opts may be nil. The
// session closes when the test ends.
func mcpConnect(t testing.TB, g *gateway, path, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   g.URL + path,
		HTTPClient: &http.Client{Transport: bearer{testAgentKey}},
		MaxRetries: -1,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-test-host", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect to %s (%s): %v", path, revision, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != revision {
		t.Fatalf("negotiated %s, want %s", got, revision)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpToolNames lists the tools of an MCP session by name.
func mcpToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := make([]string, len(res.Tools))
	for i, tool := range res.Tools {
		names[i] = tool.Name
	}
	return names
}

// callFunc is a mobile.CallHandler made of a function.
type callFunc func(call *mobile.Call) (string, error)

func (f callFunc) HandleCall(call *mobile.Call) (string, error) { return f(call) }

// toolSpec is a tool a test's client session registers.
type toolSpec struct {
	name, description, parameters string
	options                       *mobile.ToolOptions
}

// connectClient connects the Go client SDK (package mobile, over SSE) to
// g as a client session offering tools, answered by handle; it closes
// when the test ends.
func connectClient(t *testing.T, g *gateway, name string, handle callFunc, tools ...toolSpec) *mobile.Client {
	t.Helper()
	c := mobile.NewClient(g.URL)
	c.SetLogger(sdkQuiet{})
	c.SetTransport(mobile.TransportSSE)
	c.SetClientInfo(name, "1.0", "desktop")
	for _, tool := range tools {
		if err := c.RegisterToolWithOptions(tool.name, tool.description, tool.parameters, tool.options); err != nil {
			t.Fatal(err)
		}
	}
	c.SetCallHandler(handle)
	if err := c.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testwait.Until(t, 10*time.Second, "the client session connected", func() bool { return c.State() == mobile.StateConnected })
	return c
}

// shortID is the part of a session id /mcp names its tools with.
func shortID(sid string) string {
	digits := ""
	for _, r := range sid {
		if r != '-' {
			digits += string(r)
		}
	}
	return digits[len(digits)-12:]
}

package server_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpimport"
)

// mcpPassword is the password in an imported server's URL: a secret the
// gateway knows, and sends the server (HTTP Basic).
const mcpPassword = "mcp-pass-Zq8vX2pL9sR4tY7u"

// An imported MCP server's errors that quote a secret the gateway sent it
// (its JSON-RPC error, its isError content) reach the caller and the
// call's record redacted.
func TestMCPImportErrorsRedacted(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "tool_error", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "login failed for u:" + mcpPassword}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "rpc_error", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad credentials " + mcpPassword}
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	g := importGateway(t, mcpimport.Config{Name: "leaky", Target: "http://u:" + mcpPassword + "@" + ln.Addr().String() + "/mcp"})
	for _, tool := range []string{"leaky__tool_error", "leaky__rpc_error"} {
		g.waitToolOnline(t, tool, true)
		status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": tool, "args": map[string]any{}})
		if strings.Contains(string(body), mcpPassword) || !strings.Contains(string(body), "[REDACTED:mcp_server_password]") {
			t.Errorf("%s: %d %s; want the password redacted", tool, status, body)
		}
	}
	for _, tool := range []string{"leaky__tool_error", "leaky__rpc_error"} {
		for _, c := range g.callsOf(tool) {
			rec := g.waitCall(c.ID)
			if rec.Error == nil || strings.Contains(rec.Error.Message, mcpPassword) || strings.Contains(string(rec.Error.Details), mcpPassword) {
				t.Errorf("%s's record: %+v; want its error redacted", tool, rec.Error)
			}
		}
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// mcpEchoTool answers with its arguments.
var mcpEchoTool = toolSpec{name: "echo", description: "Answers with its arguments",
	parameters: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`}

func echoHandler(call *mobile.Call) (string, error) { return call.ArgsJSON(), nil }

// A tool of a client session is listed on /mcp as echo__<h> and called
// through MCP, answered by the real client over its stream, on both
// revisions.
func TestMCPListAndCallSessionTool(t *testing.T) {
	g := startGateway(t, nil)
	c := connectClient(t, g, "Chrome", echoHandler, mcpEchoTool)
	name := "echo__" + shortID(c.SessionID())
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			cs := mcpConnect(t, g, "/mcp", revision, nil)
			testwait.Until(t, 10*time.Second, "the session's tool listed", func() bool {
				return slices.Contains(mcpToolNames(t, cs), name)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError: %+v", res.Content)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if text != `{"text":"hi"}` {
				t.Errorf("text = %s", text)
			}
			structured, _ := json.Marshal(res.StructuredContent)
			if string(structured) != `{"text":"hi"}` {
				t.Errorf("structuredContent = %s", structured)
			}
			id, _ := res.Meta["io.toolgate/call_id"].(string)
			call := mcpGetCall(t, g, id)
			if call.Status != "completed" || call.Tool != "echo" || call.SessionID != c.SessionID() {
				t.Errorf("the call's record = %+v", call)
			}
		})
	}
}

// mcpCallRecord is the part of a call's record (GET /v1/calls/{id}) the MCP
// tests check.
type mcpCallRecord struct {
	Status    string `json:"status"`
	Tool      string `json:"tool"`
	SessionID string `json:"session_id"`
	Error     *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// mcpGetCall reads a call's record.
func mcpGetCall(t *testing.T, g *gateway, id string) mcpCallRecord {
	t.Helper()
	status, body := g.do("GET", "/v1/calls/"+id, testAgentKey, nil)
	if status != 200 {
		t.Fatalf("GET /v1/calls/%s: %d %s", id, status, body)
	}
	var call mcpCallRecord
	if err := json.Unmarshal(body, &call); err != nil {
		t.Fatal(err)
	}
	return call
}

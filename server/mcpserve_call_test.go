package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// mcpCall calls a tool through an MCP session within ten seconds.
func mcpCall(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, params)
}

// structured returns a result's structuredContent as JSON (as the client
// decoded it: an object's keys sorted).
func structured(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A client's tool_error, arguments the tool's schema refuses and a tool
// that is not there map onto MCP as the protocol document says: the
// first two as results with isError (a stored failed call, a refusal
// stored nowhere), the last as a JSON-RPC error.
func TestMCPCallErrors(t *testing.T) {
	g := startGateway(t, nil)
	fail := toolSpec{name: "fail", description: "Always fails", parameters: `{"type":"object"}`}
	c := connectClient(t, g, "Chrome", func(call *mobile.Call) (string, error) {
		if call.ToolName() == "fail" {
			return "", mobile.NewToolError("NO_CAMERA", "the camera is off", `{"retry":false}`)
		}
		return call.ArgsJSON(), nil
	}, mcpEchoTool, fail)
	h := shortID(c.SessionID())
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			cs := mcpConnect(t, g, "/mcp", revision, nil)
			testwait.Until(t, 10*time.Second, "the tools listed", func() bool {
				return slices.Contains(mcpToolNames(t, cs), "fail__"+h)
			})

			res, err := mcpCall(t, cs, &mcp.CallToolParams{Name: "fail__" + h, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Content[0].(*mcp.TextContent).Text != "NO_CAMERA: the camera is off" {
				t.Errorf("tool_error: isError %v, content %+v", res.IsError, res.Content[0])
			}
			if got := structured(t, res); got != `{"error":{"code":"NO_CAMERA","details":{"retry":false},"message":"the camera is off"}}` {
				t.Errorf("tool_error: structuredContent %s", got)
			}
			if id, _ := res.Meta["io.toolgate/call_id"].(string); mcpGetCall(t, g, id).Status != "failed" {
				t.Errorf("tool_error: the call's record is not failed")
			}

			res, err = mcpCall(t, cs, &mcp.CallToolParams{Name: "echo__" + h, Arguments: map[string]any{"text": 5}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "INVALID_ARGS: ") {
				t.Errorf("bad arguments: isError %v, content %+v", res.IsError, res.Content[0])
			}
			if got := structured(t, res); !strings.HasPrefix(got, `{"error":{"code":"INVALID_ARGS"`) {
				t.Errorf("bad arguments: structuredContent %s", got)
			}
			if _, ok := res.Meta["io.toolgate/call_id"]; ok {
				t.Error("bad arguments: a call id, but the call was refused before it was stored")
			}

			_, err = mcpCall(t, cs, &mcp.CallToolParams{Name: "nope__" + h, Arguments: map[string]any{}})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("unknown tool: %v, want a JSON-RPC invalid params error", err)
			}
		})
	}
}

// Progress a client reports reaches a host that asked for it as
// notifications/progress on the request's stream, on both revisions.
func TestMCPProgress(t *testing.T) {
	g := startGateway(t, nil)
	seen := make(chan *mcp.ProgressNotificationParams, 8)
	step := make(chan struct{})
	slow := toolSpec{name: "slow", description: "Reports progress", parameters: `{"type":"object"}`}
	c := connectClient(t, g, "Pixel", func(call *mobile.Call) (string, error) {
		for i := int64(1); i <= 2; i++ {
			if err := call.ReportProgress(i, 2, fmt.Sprintf("step %d", i)); err != nil {
				return "", err
			}
			<-step // the host has seen it
		}
		return `"done"`, nil
	}, slow)
	name := "slow__" + shortID(c.SessionID())
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			cs := mcpConnect(t, g, "/mcp", revision, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					seen <- req.Params
					step <- struct{}{}
				},
			})
			testwait.Until(t, 10*time.Second, "the tool listed", func() bool { return slices.Contains(mcpToolNames(t, cs), name) })
			params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
			params.SetProgressToken("p-" + revision)
			res, err := mcpCall(t, cs, params)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != "done" || res.StructuredContent != nil {
				t.Errorf("result: %+v", res)
			}
			for i := 1; i <= 2; i++ {
				p := <-seen
				if p.ProgressToken != "p-"+revision || p.Progress != float64(i) || p.Total != 2 || p.Message != fmt.Sprintf("step %d", i) {
					t.Errorf("progress %d: %+v", i, p)
				}
			}
		})
	}
}

package mcpimport

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// TestResultOutput: how an MCP tool result becomes a call's output.
func TestResultOutput(t *testing.T) {
	texts := func(s ...string) []mcp.Content {
		var out []mcp.Content
		for _, x := range s {
			out = append(out, &mcp.TextContent{Text: x})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"structured wins", &mcp.CallToolResult{Content: texts("ignored"), StructuredContent: []any{1, "a<b"}}, `[1,"a<b"]`},
		{"one text", &mcp.CallToolResult{Content: texts("hello")}, `"hello"`},
		{"texts joined", &mcp.CallToolResult{Content: texts("a", "b")}, `"a\nb"`},
		{"no content", &mcp.CallToolResult{}, `null`},
		{"mixed content", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}, &mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
			`[{"type":"text","text":"t"},{"type":"image","mimeType":"image/png","data":"eA=="}]`},
	} {
		out, err := resultOutput(tc.res, 1<<20)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, out, err, tc.want)
		}
	}

	_, err := resultOutput(&mcp.CallToolResult{Content: texts(strings.Repeat("x", 100))}, 50)
	if toolgate.ErrorCode(err) != toolgate.EPayloadTooLarge {
		t.Errorf("a result over the limit: %v", err)
	}
	_, err = resultOutput(&mcp.CallToolResult{IsError: true}, 1<<20)
	if toolgate.ErrorCode(err) != CodeToolError || toolgate.ErrorMessage(err) != "the MCP tool reported an error" {
		t.Errorf("an error without text: %v", err)
	}
}

package mcpserve

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// TestResultOfContentBlocks: an output that is a list of whole MCP content
// blocks reaches the host as those blocks; anything short of that (a
// block missing a part, bad base64, a type a tool result may not carry, an
// empty list, other values) as one text block of its JSON.
func TestResultOfContentBlocks(t *testing.T) {
	blocks := `[{"type":"text","text":"a dot"},{"type":"image","data":"iVBORw==","mimeType":"image/png"},` +
		`{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a","name":"a"},` +
		`{"type":"resource","resource":{"uri":"file:///b","text":"bee"}}]`
	res := resultOf(&toolgate.Call{ID: "c", Status: toolgate.StatusCompleted, Output: json.RawMessage(blocks)})
	if len(res.Content) != 5 || res.StructuredContent != nil {
		t.Fatalf("content %+v, structured %v", res.Content, res.StructuredContent)
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || string(img.Data) != "\x89PNG" {
		t.Errorf("image %#v", res.Content[1])
	}
	for _, output := range []string{
		`[]`,
		`[1, 2]`,
		`[{"type":"image","data":"iVBORw=="}]`,
		`[{"type":"image","data":"not base64!","mimeType":"image/png"}]`,
		`[{"type":"image","mimeType":"image/png"}]`,
		`[{"type":"resource_link","uri":"file:///a"}]`,
		`[{"type":"resource"}]`,
		`[{"type":"tool_use","id":"x","name":"y","input":{}}]`,
		`[{"type":"text","text":"ok"},{"type":"video","data":"AA=="}]`,
		`{"type":"text","text":"an object, not a list"}`,
	} {
		res := resultOf(&toolgate.Call{ID: "c", Status: toolgate.StatusCompleted, Output: json.RawMessage(output)})
		if len(res.Content) != 1 {
			t.Errorf("%s: %d blocks", output, len(res.Content))
			continue
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != outputText(json.RawMessage(output)) {
			t.Errorf("%s became %#v", output, res.Content[0])
		}
	}
}

// TestBuildToolPresentation: a tool's title, annotations, output schema
// and icons are on its MCP definition, unchanged.
func TestBuildToolPresentation(t *testing.T) {
	no, yes := false, true
	info := toolgate.ToolInfo{ToolSpec: toolgate.ToolSpec{Name: "w", Description: "d", ReadOnly: true,
		Title: "W", Annotations: &toolgate.ToolAnnotations{Title: "A", DestructiveHint: &no, IdempotentHint: &yes},
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"c":{"type":"number"}}}`),
		Icons:        json.RawMessage(`[{"src":"https://example.com/i.png","theme":"dark"}]`)}}
	tool, err := buildTool("w", info, "")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(tool)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"title":        `"W"`,
		"annotations":  `{"destructiveHint":false,"idempotentHint":true,"readOnlyHint":true,"title":"A"}`,
		"outputSchema": `{"type":"object","properties":{"c":{"type":"number"}}}`,
		"icons":        `[{"src":"https://example.com/i.png","theme":"dark"}]`,
	}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
}

package mcpimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/mcpimport"
)

// answerSchema is the output schema of the presentation server's typed
// tools: {"answer": integer}, required.
const answerSchema = `{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`

// newPresentationServer is a Go SDK server whose tools carry a title,
// annotations, icons and an output schema, and answer matching it or
// not, or with content blocks of every kind.
func newPresentationServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "presentation", Version: "1"}, nil)
	yes, no := true, false
	typed := &mcp.Tool{Name: "typed", Title: "Typed answer", Description: "Answers 42.", InputSchema: objectSchema(),
		Annotations:  &mcp.ToolAnnotations{Title: "Typed", DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &yes},
		Icons:        []mcp.Icon{{Source: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"48x48"}, Theme: mcp.IconThemeDark}},
		OutputSchema: json.RawMessage(answerSchema)}
	s.AddTool(typed, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := text(`{"answer":42}`)
		res.StructuredContent = map[string]any{"answer": 42}
		return res, nil
	})
	s.AddTool(&mcp.Tool{Name: "mistyped", Description: "Answers a string where its schema says integer.", InputSchema: objectSchema(),
		OutputSchema: json.RawMessage(answerSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text(`{"answer":"forty-two"}`)
			res.StructuredContent = map[string]any{"answer": "forty-two"}
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "unstructured", Description: "Declares an output schema, answers text only.", InputSchema: objectSchema(),
		OutputSchema: json.RawMessage(answerSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("42"), nil })
	deep := `{"type":"object"}`
	for range 70 {
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	s.AddTool(&mcp.Tool{Name: "deep-output", Description: "An output schema past the depth limit.", InputSchema: objectSchema(),
		OutputSchema: json.RawMessage(deep), Icons: []mcp.Icon{{Source: "javascript:alert(1)"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"x": 1}, Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "blocks", Description: "Answers with a block of every kind.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a dot"},
				&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
				&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
				&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "bee"}},
			}}, nil
		})
	return s
}

// TestImportedPresentation: an imported tool keeps its title,
// annotations, icons and output schema; one whose output schema or icons
// the gateway refuses stays listed without them, with a warning.
func TestImportedPresentation(t *testing.T) {
	h := startHTTPMCPServer(t, newPresentationServer(), nil)
	var log testlog.LockedBuffer
	s := startImport(t, mcpimport.Config{Name: "pres", Target: h.URL()}, fastOptions(log.Logger(slog.LevelDebug)))
	want := []string{"pres__blocks", "pres__deep-output", "pres__mistyped", "pres__typed", "pres__unstructured"}
	if got := toolNames(s); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	spec := toolgate.SpecOf(toolNamed(t, s, "pres__typed"))
	if spec.Title != "Typed answer" {
		t.Errorf("title %q", spec.Title)
	}
	a := spec.Annotations
	if a == nil || a.Title != "Typed" || a.DestructiveHint == nil || *a.DestructiveHint || a.IdempotentHint == nil || !*a.IdempotentHint ||
		a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("annotations %+v", a)
	}
	if !sameJSON(spec.OutputSchema, answerSchema) {
		t.Errorf("output schema %s, want %s", spec.OutputSchema, answerSchema)
	}
	if want := `[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`; string(spec.Icons) != want {
		t.Errorf("icons %s, want %s", spec.Icons, want)
	}
	if err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{}); err != nil {
		t.Errorf("the typed tool's spec is refused: %v", err)
	}
	deep := toolgate.SpecOf(toolNamed(t, s, "pres__deep-output"))
	if deep.OutputSchema != nil || deep.Icons != nil {
		t.Errorf("the deep tool kept %s and icons %s", deep.OutputSchema, deep.Icons)
	}
	for _, part := range []string{"part=outputSchema", "part=icons"} {
		if !strings.Contains(log.String(), part) {
			t.Errorf("no warning with %s in the log:\n%s", part, log.String())
		}
	}
	// Without its (refused) schema its output is not checked.
	wantOutput(t, s, "pres__deep-output", `{}`, `{"x":1}`)
}

// TestStructuredContentChecked: a result whose structuredContent matches
// the tool's outputSchema passes; one that does not, or that has none,
// is OUTPUT_INVALID, saying why.
func TestStructuredContentChecked(t *testing.T) {
	h := startHTTPMCPServer(t, newPresentationServer(), nil)
	s := startImport(t, mcpimport.Config{Name: "pres", Target: h.URL()}, fastOptions(slog.New(slog.DiscardHandler)))
	wantOutput(t, s, "pres__typed", `{}`, `{"answer":42}`)
	_, err := call(t, s, "pres__mistyped", `{}`)
	te := wantCode(t, err, toolgate.EOutputInvalid)
	if !strings.Contains(te.Message, "does not match its outputSchema") || !strings.Contains(te.Message, "answer") {
		t.Errorf("message %q", te.Message)
	}
	_, err = call(t, s, "pres__unstructured", `{}`)
	te = wantCode(t, err, toolgate.EOutputInvalid)
	if !strings.Contains(te.Message, "no structuredContent") {
		t.Errorf("message %q", te.Message)
	}
}

// TestContentBlocksKept: a result of content blocks is stored as the
// blocks themselves, every part kept (what /mcp hands on as blocks).
func TestContentBlocksKept(t *testing.T) {
	h := startHTTPMCPServer(t, newPresentationServer(), nil)
	s := startImport(t, mcpimport.Config{Name: "pres", Target: h.URL()}, fastOptions(slog.New(slog.DiscardHandler)))
	out, err := call(t, s, "pres__blocks", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":`+string(out)+`}`), &res); err != nil {
		t.Fatalf("the output is not content blocks: %v\n%s", err, out)
	}
	if len(res.Content) != 5 {
		t.Fatalf("%d blocks: %s", len(res.Content), out)
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, []byte{0x89, 'P', 'N', 'G'}) {
		t.Errorf("image block %#v", res.Content[1])
	}
	if r, ok := res.Content[4].(*mcp.EmbeddedResource); !ok || r.Resource.Text != "bee" {
		t.Errorf("resource block %#v", res.Content[4])
	}
}

// sameJSON reports whether raw holds the same JSON value as want.
func sameJSON(raw json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

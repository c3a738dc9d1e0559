package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestCheckToolPresentation: a tool's title, annotations, output schema
// and icons within their bounds pass; each past them is BAD_REQUEST
// naming the field.
func TestCheckToolPresentation(t *testing.T) {
	ok := toolgate.ToolSpec{Name: "w", Description: "d", Title: strings.Repeat("é", 256),
		Annotations:  &toolgate.ToolAnnotations{Title: "A"},
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"c":{"type":"number"}}}`),
		Icons:        json.RawMessage(`[{"src":"data:image/png;base64,iVBORw==","mimeType":"image/png","sizes":["48x48"],"theme":"light"}]`)}
	if err := toolgate.CheckToolSpec(ok, toolgate.ToolSpecChecks{}); err != nil {
		t.Fatalf("a spec within the bounds is refused: %v", err)
	}
	deep := `{"type":"object"}`
	for range 40 {
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	manyIcons := "[" + strings.Repeat(`{"src":"https://e.com/i.png"},`, 8) + `{"src":"https://e.com/i.png"}]`
	bad := map[string]struct {
		change func(*toolgate.ToolSpec)
		want   string
	}{
		"long title":      {func(s *toolgate.ToolSpec) { s.Title = strings.Repeat("t", 257) }, "title is 257 characters; the limit is 256"},
		"NUL in title":    {func(s *toolgate.ToolSpec) { s.Title = "a\x00b" }, "title "},
		"long ann. title": {func(s *toolgate.ToolSpec) { s.Annotations = &toolgate.ToolAnnotations{Title: strings.Repeat("t", 300)} }, "annotations.title is 300 characters"},
		"deep schema":     {func(s *toolgate.ToolSpec) { s.OutputSchema = json.RawMessage(deep) }, "output_schema nests objects and arrays deeper than 64 levels"},
		"huge schema": {func(s *toolgate.ToolSpec) {
			s.OutputSchema = json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", 65<<10) + `"}`)
		}, "output_schema is 66"},
		"array schema":    {func(s *toolgate.ToolSpec) { s.OutputSchema = json.RawMessage(`{"type":"array"}`) }, `output_schema must have the top-level "type": "object"`},
		"schema not JSON": {func(s *toolgate.ToolSpec) { s.OutputSchema = json.RawMessage(`{"type":`) }, "output_schema "},
		"twice-named":     {func(s *toolgate.ToolSpec) { s.OutputSchema = json.RawMessage(`{"type":"object","type":"object"}`) }, "output_schema names the member"},
		"outside $ref": {func(s *toolgate.ToolSpec) {
			s.OutputSchema = json.RawMessage(`{"type":"object","$ref":"https://e.com/s"}`)
		}, "output_schema has a $ref"},
		"icons not list": {func(s *toolgate.ToolSpec) { s.Icons = json.RawMessage(`{"src":"https://e.com"}`) }, "icons must be an array"},
		"icon field":     {func(s *toolgate.ToolSpec) { s.Icons = json.RawMessage(`[{"src":"https://e.com","onload":"x"}]`) }, "icons must be an array"},
		"icon scheme":    {func(s *toolgate.ToolSpec) { s.Icons = json.RawMessage(`[{"src":"http://e.com/i.png"}]`) }, "icons[0].src must be an https: or data: URI"},
		"icon theme":     {func(s *toolgate.ToolSpec) { s.Icons = json.RawMessage(`[{"src":"https://e.com","theme":"blue"}]`) }, "icons[0].theme must be light or dark"},
		"too many icons": {func(s *toolgate.ToolSpec) { s.Icons = json.RawMessage(manyIcons) }, "icons holds 9 icons; the limit is 8"},
		"icons too big": {func(s *toolgate.ToolSpec) {
			s.Icons = json.RawMessage(`[{"src":"data:` + strings.Repeat("A", 65<<10) + `"}]`)
		}, "icons is 66"},
		"icon src too big": {func(s *toolgate.ToolSpec) {
			s.Icons = json.RawMessage(`[{"src":"data:` + strings.Repeat("A", 50<<10) + `"}]`)
		}, "icons[0].src is 51"},
	}
	for name, b := range bad {
		spec := ok
		b.change(&spec)
		err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{})
		if toolgate.ErrorCode(err) != toolgate.EBadRequest || !strings.Contains(toolgate.ErrorMessage(err), b.want) {
			t.Errorf("%s: %v, want BAD_REQUEST saying %q", name, err, b.want)
		}
	}
}

package mcpimport

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
)

// presentTool sets t's presentation from the server's listing of it: its
// title and annotations (titles cut to toolgate.MaxTitleLength), its
// outputSchema (compiled, so that results are checked against it) and its
// icons. An output schema or icons the gateway refuses are left out with
// a warning (the tool stays listed, without them), unless the previous
// listing warned of the same (warned).
func (s *Server) presentTool(t *tool, mt *mcp.Tool, warned map[string]string) {
	p := toolgate.Presentation{Title: cutTitle(mt.Title)}
	if a := mt.Annotations; a != nil {
		ann := toolgate.ToolAnnotations{Title: cutTitle(a.Title), DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.IdempotentHint {
			ann.IdempotentHint = &a.IdempotentHint
		}
		if ann != (toolgate.ToolAnnotations{}) {
			p.Annotations = &ann
		}
	}
	if mt.OutputSchema != nil {
		raw, sch, err := outputSchemaOf(mt.OutputSchema)
		if err != nil {
			s.warnPresentation(warned, mt.Name, "outputSchema", err)
		} else if raw != nil {
			p.OutputSchema, t.output = raw, sch
		}
	}
	if len(mt.Icons) > 0 {
		raw, err := marshalJSON(mt.Icons)
		if err == nil {
			err = toolgate.CheckToolIcons(raw)
		}
		if err != nil {
			s.warnPresentation(warned, mt.Name, "icons", err)
		} else {
			p.Icons = raw
		}
	}
	t.presentation = p
}

// warnPresentation logs a part of a tool's listing left out, unless
// warned (the previous listing's) holds the same warning; it is kept in
// s.leftOut under "tool\x00part".
func (s *Server) warnPresentation(warned map[string]string, tool, part string, err error) {
	why := s.redactText(toolgate.ErrorMessage(err))
	key := tool + "\x00" + part
	if warned[key] != why {
		s.log.Warn("MCP tool listed without a part the gateway refuses", "tool", tool, "part", part, "why", why)
	}
	s.leftOut[key] = why
}

// cutTitle shortens a title to toolgate.MaxTitleLength characters.
func cutTitle(title string) string { return cut(title, toolgate.MaxTitleLength) }

// outputSchemaOf returns a tool's outputSchema as JSON and compiled: nil
// for a JSON null; an error when it breaks the gateway's limits on a
// schema (toolgate.CheckToolOutputSchema) or does not compile.
func outputSchemaOf(schema any) (json.RawMessage, *jsonschema.Schema, error) {
	raw, err := marshalJSON(schema)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil, nil
	}
	if err := toolgate.CheckToolOutputSchema(raw); err != nil {
		return nil, nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme is loadable
	const loc = "mem://tool/output_schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return raw, sch, nil
}

// checkStructured checks a result's structuredContent (as JSON) against
// the tool's output schema: OUTPUT_INVALID when it has none or it does
// not match.
func (t *tool) checkStructured(structured json.RawMessage) error {
	if t.output == nil {
		return nil
	}
	if structured == nil {
		return toolgate.Errorf(toolgate.EOutputInvalid, "the MCP tool %s declares an outputSchema, and its result has no structuredContent", t.remote).
			WithDetails(map[string]any{"server": t.srv.cfg.Name})
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err == nil {
		err = t.output.Validate(v)
	}
	if err != nil {
		return toolgate.Errorf(toolgate.EOutputInvalid, "the MCP tool %s's structuredContent does not match its outputSchema: %s", t.remote, cut(err.Error(), maxErrorMessage)).
			WithDetails(map[string]any{"server": t.srv.cfg.Name})
	}
	return nil
}

// samePresentation reports whether two presentations are the same.
func samePresentation(a, b toolgate.Presentation) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

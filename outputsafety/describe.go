package outputsafety

import (
	"encoding/json"

	"github.com/toolgate/toolgate"
)

// DescriptionWithheld is what a model is shown instead of a tool's
// description, or of its parameters' descriptions, that held text aimed
// at it.
const DescriptionWithheld = "(description withheld: it held text aimed at the model)"

// ScreenedTool is a tool's description and parameters as a model may be
// shown them.
type ScreenedTool[F any] struct {
	Description string
	Parameters  json.RawMessage
	// Findings are what find found; nil when nothing was withheld.
	Findings []F
}

// Withheld reports whether anything was withheld.
func (s ScreenedTool[F]) Withheld() bool { return s.Findings != nil }

// ScreenTool returns a tool's description and parameters (a JSON Schema)
// as a model may be shown them. find returns the injection attempts in a
// JSON value (FindInjections, or the agent loop's guard). A flagged
// description becomes DescriptionWithheld; flagged parameters have every
// description and title replaced so, or, when that is not enough, become
// {"type":"object"}. The tool stays callable: only what a model reads of
// it changes. Every path that hands tools from outside the gateway to a
// model or an MCP host screens them so: the agent loop, the MCP endpoint,
// GET /api/tools.
func ScreenTool[F any](description string, parameters json.RawMessage, find func(json.RawMessage) []F) ScreenedTool[F] {
	out := ScreenedTool[F]{Description: description, Parameters: parameters}
	if description != "" {
		raw, _ := json.Marshal(description)
		if f := find(raw); len(f) > 0 {
			out.Description, out.Findings = DescriptionWithheld, f
		}
	}
	if len(parameters) == 0 {
		return out
	}
	f := find(parameters)
	if len(f) == 0 {
		return out
	}
	out.Findings = append(out.Findings, f...)
	var schema any
	if json.Unmarshal(parameters, &schema) == nil {
		withholdDescriptions(schema, 0)
		if b, err := json.Marshal(schema); err == nil && len(find(b)) == 0 {
			out.Parameters = b
			return out
		}
	}
	out.Parameters = json.RawMessage(`{"type":"object"}`)
	return out
}

// FindInjections returns the injection attempts found in v (any JSON
// value): the search of ModeFull, the value itself left alone.
func (s *Sanitizer) FindInjections(v json.RawMessage) []Finding {
	_, rep := s.Sanitize(v, ModeFull)
	return rep.Findings
}

// ScreenToolInfo is ScreenTool over a listed tool: one from outside the
// gateway (a client's, an imported server's, a sandboxed one) is returned
// with what a model may be shown of it (DescriptionWithheld set when
// anything was withheld), and the findings; a built-in tool as it is.
func (s *Sanitizer) ScreenToolInfo(info toolgate.ToolInfo) (toolgate.ToolInfo, []Finding) {
	if info.Source.Kind == toolgate.SourceBuiltin {
		return info, nil
	}
	sc := ScreenTool(info.Description, info.Parameters, s.FindInjections)
	if sc.Withheld() {
		info.Description, info.Parameters, info.DescriptionWithheld = sc.Description, sc.Parameters, true
	}
	findings := sc.Findings
	// What MCP hosts see besides: the titles are left out, and the output
	// schema's descriptions withheld as the parameters' are.
	if title, f := s.ScreenText(info.Title); len(f) > 0 {
		info.Title, info.DescriptionWithheld, findings = title, true, append(findings, f...)
	}
	if a := info.Annotations; a != nil {
		if title, f := s.ScreenText(a.Title); len(f) > 0 {
			screened := *a
			screened.Title = title
			info.Annotations, info.DescriptionWithheld, findings = &screened, true, append(findings, f...)
		}
	}
	if len(info.OutputSchema) > 0 {
		if out := ScreenTool("", info.OutputSchema, s.FindInjections); out.Withheld() {
			info.OutputSchema, info.DescriptionWithheld, findings = out.Parameters, true, append(findings, out.Findings...)
		}
	}
	return info, findings
}

// ScreenText returns text, or "" and the findings when it holds text
// aimed at the model (a client's name before it is put into a
// description, say).
func (s *Sanitizer) ScreenText(text string) (string, []Finding) {
	if text == "" {
		return text, nil
	}
	raw, _ := json.Marshal(text)
	if f := s.FindInjections(raw); len(f) > 0 {
		return "", f
	}
	return text, nil
}

// maxSchemaDepth bounds withholdDescriptions' walk (a schema the gateway
// accepted is far shallower).
const maxSchemaDepth = 256

// withholdDescriptions replaces, in a decoded JSON Schema, every string
// "description" and "title" by DescriptionWithheld.
func withholdDescriptions(v any, depth int) {
	if depth > maxSchemaDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if _, isString := x.(string); isString && (k == "description" || k == "title") {
				v[k] = DescriptionWithheld
				continue
			}
			withholdDescriptions(x, depth+1)
		}
	case []any:
		for _, x := range v {
			withholdDescriptions(x, depth+1)
		}
	}
}

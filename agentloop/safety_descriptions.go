package agentloop

import (
	"encoding/json"

	"github.com/toolgate/toolgate"
)

// DescriptionWithheld is what the model is shown instead of a tool's
// description, or of its parameters' descriptions, that held text aimed
// at it.
const DescriptionWithheld = "(description withheld: it held text aimed at the model)"

// guardDescriptions returns tools as the model may be shown them: the
// description and parameters of a tool from outside the gateway (a
// client's, an imported server's, a sandboxed one) pass the guard's
// injection search, since a client writes them as it writes its outputs.
// A flagged description is replaced by DescriptionWithheld; flagged
// parameters have their descriptions and titles replaced so, or, when
// that is not enough, become {"type":"object"}. Each tool withheld is
// logged once per run (told holds those already logged).
func (r *Runner) guardDescriptions(runID string, tools []Tool, told map[string]bool) []Tool {
	if r.Guard == nil {
		return tools
	}
	out, copied := tools, false
	for i, t := range tools {
		if !describedFromOutside(t) {
			continue
		}
		desc, descFindings := r.flaggedText(t, t.Description())
		params, paramFindings := r.guardParameters(t)
		if descFindings == nil && paramFindings == nil {
			continue
		}
		if !copied {
			out, copied = append([]Tool(nil), tools...), true // tools is the caller's
		}
		out[i] = describedTool{Tool: t, description: desc, parameters: params}
		if !told[t.Name()] {
			told[t.Name()] = true
			r.log().Warn("a tool's description held text aimed at the model: the model is shown it withheld",
				"run", runID, "tool", t.Name(), "findings", append(descFindings, paramFindings...))
		}
	}
	return out
}

// describedFromOutside reports whether the tool's description was written
// outside the gateway.
func describedFromOutside(t Tool) bool {
	if s, ok := t.(interface{ Source() toolgate.ToolSource }); ok {
		return s.Source().Kind != toolgate.SourceBuiltin
	}
	return requiresSanitization(t)
}

// flaggedText returns text, or DescriptionWithheld and the findings when
// the guard flags it.
func (r *Runner) flaggedText(t Tool, text string) (string, []OutputFinding) {
	if text == "" {
		return text, nil
	}
	raw, _ := json.Marshal(text)
	if g := r.Guard.GuardOutput(t.Name(), raw, true); len(g.Findings) > 0 {
		return DescriptionWithheld, g.Findings
	}
	return text, nil
}

// guardParameters returns the tool's parameters as the model may see
// them, and the findings in them (nil when none).
func (r *Runner) guardParameters(t Tool) (json.RawMessage, []OutputFinding) {
	params := t.Parameters()
	g := r.Guard.GuardOutput(t.Name(), params, true)
	if len(g.Findings) == 0 {
		return params, nil
	}
	var schema any
	if json.Unmarshal(params, &schema) == nil {
		withholdDescriptions(schema, 0)
		if b, err := json.Marshal(schema); err == nil && len(r.Guard.GuardOutput(t.Name(), b, true).Findings) == 0 {
			return b, g.Findings
		}
	}
	return json.RawMessage(`{"type":"object"}`), g.Findings
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

// describedTool is a tool shown to the model with another description and
// parameters; only Definitions reads it.
type describedTool struct {
	Tool
	description string
	parameters  json.RawMessage
}

// Description implements Tool.
func (t describedTool) Description() string { return t.description }

// Parameters implements Tool.
func (t describedTool) Parameters() json.RawMessage { return t.parameters }

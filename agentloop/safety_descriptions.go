package agentloop

import (
	"encoding/json"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/outputsafety"
)

// DescriptionWithheld is what the model is shown instead of a tool's
// description, or of its parameters' descriptions, that held text aimed
// at it.
const DescriptionWithheld = outputsafety.DescriptionWithheld

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
		sc := outputsafety.ScreenTool(t.Description(), t.Parameters(), func(v json.RawMessage) []OutputFinding {
			return r.Guard.GuardOutput(t.Name(), v, true).Findings
		})
		if !sc.Withheld() {
			continue
		}
		if !copied {
			out, copied = append([]Tool(nil), tools...), true // tools is the caller's
		}
		out[i] = describedTool{Tool: t, description: sc.Description, parameters: sc.Parameters}
		if !told[t.Name()] {
			told[t.Name()] = true
			r.log().Warn("a tool's description held text aimed at the model: the model is shown it withheld",
				"run", runID, "tool", t.Name(), "findings", sc.Findings)
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

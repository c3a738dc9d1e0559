package agentloop

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestGuardDescriptions: a flagged description of a tool from outside is
// withheld and logged once per run; a built-in's is not looked at; the
// caller's slice is left as it was.
func TestGuardDescriptions(t *testing.T) {
	var logs bytes.Buffer
	looked := map[string]int{}
	r := &Runner{Log: slog.New(slog.NewTextHandler(&logs, nil)), Guard: fakeGuard{guard: func(tool string, output json.RawMessage, full bool) GuardedOutput {
		looked[tool]++
		g := GuardedOutput{Output: output}
		if full && strings.Contains(string(output), "obey") {
			g.Findings = []OutputFinding{{Pattern: "role_change", Path: "$"}}
		}
		return g
	}}}
	remote := NewRemoteTool(toolgate.ToolSpec{Name: "fetch", Description: "obey me"}, "s1", nil)
	plain := NewRemoteTool(toolgate.ToolSpec{Name: "weather", Description: "the weather"}, "s1", nil)
	builtin := &GatewayTool{spec: toolgate.ToolSpec{Name: "clock", Description: "obey the clock"}, source: toolgate.ToolSource{Kind: toolgate.SourceBuiltin}}
	tools := []Tool{remote, plain, builtin}
	told := map[string]bool{}
	for range 2 {
		defs := Definitions(r.guardDescriptions("r1", tools, told))
		if defs[0].Description != DescriptionWithheld || defs[1].Description != "the weather" || defs[2].Description != "obey the clock" {
			t.Errorf("definitions = %+v", defs)
		}
	}
	if tools[0] != remote || looked["clock"] != 0 || looked["fetch"] == 0 {
		t.Errorf("tools = %v, looked = %v", tools, looked)
	}
	if n := strings.Count(logs.String(), "description held text aimed at the model"); n != 1 {
		t.Errorf("logged %d times: %s", n, logs.String())
	}
}

package toolgate_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestCheckToolSpec pins each rule's code and message: a registration's
// rejection carries them to the client as they are, and the Go SDK
// reports them too.
func TestCheckToolSpec(t *testing.T) {
	good := toolgate.ToolSpec{Name: "camera_snap", Description: "Take a photo"}
	with := func(change func(*toolgate.ToolSpec)) toolgate.ToolSpec {
		spec := good
		change(&spec)
		return spec
	}
	cases := []struct {
		name string
		spec toolgate.ToolSpec
		want string // "" when accepted
	}{
		{"the least a tool needs", good, ""},
		{"every trait", with(func(s *toolgate.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","properties":{"flash":{"type":"boolean"}}}`)
			s.TimeoutMS, s.RequiresApproval, s.ReadOnly = 60000, toolgate.ApprovalAlways, true
			s.RateLimit = &toolgate.RateLimit{RequestsPerMinute: 6}
		}), ""},
		{"parameters null", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`null`) }), ""},
		{"a space in the name", with(func(s *toolgate.ToolSpec) { s.Name = "has space" }), "name must match ^[A-Za-z0-9_-]{1,64}$"},
		{"a name too long", with(func(s *toolgate.ToolSpec) { s.Name = strings.Repeat("a", 65) }), "name must match ^[A-Za-z0-9_-]{1,64}$"},
		{"a blank description", with(func(s *toolgate.ToolSpec) { s.Description = " \n" }), "description is required"},
		{"a description too long", with(func(s *toolgate.ToolSpec) { s.Description = strings.Repeat("é", 4097) }), "description is 4097 characters; the limit is 4096"},
		{"a negative timeout", with(func(s *toolgate.ToolSpec) { s.TimeoutMS = -1 }), "timeout_ms must not be negative"},
		{"an unknown approval", with(func(s *toolgate.ToolSpec) { s.RequiresApproval = "sometimes" }), "requires_approval must be never, unless_auto_approved or always"},
		{"a negative rate limit", with(func(s *toolgate.ToolSpec) { s.RateLimit = &toolgate.RateLimit{RequestsPerHour: -1} }), "rate_limit values must not be negative"},
		{"parameters not JSON", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`{"type":`) }), "parameters is not JSON: unexpected EOF"},
		{"two JSON values", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`{"type":"object"} {}`) }), "parameters is not JSON: invalid character after top-level value"},
		{"parameters an array", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`[1]`) }), "parameters must be a JSON Schema object"},
		{"parameters of another type", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`{"type":"string"}`) }), `parameters must have the top-level "type": "object"`},
		{"parameters without a type", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage(`{"properties":{}}`) }), `parameters must have the top-level "type": "object"`},
		{"parameters at every limit", with(func(s *toolgate.ToolSpec) { s.Parameters = paramsAtLimits(t) }), ""},
		{"parameters too large", with(func(s *toolgate.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", 64<<10) + `"}`)
		}), "parameters is 65570 bytes; the limit is 65536"},
		{"parameters nested too deep", with(func(s *toolgate.ToolSpec) { s.Parameters = nestedParameters(toolgate.MaxParametersDepth + 1) }),
			"parameters nests objects and arrays deeper than 64 levels"},
		{"parameters with too many objects", with(func(s *toolgate.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","enum":[` + strings.Repeat("{},", toolgate.MaxParametersNodes-1) + `{}]}`)
		}), "parameters has more than 1024 objects and arrays"},
		{"parameters naming a member twice", with(func(s *toolgate.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}`)
		}), `parameters names the member "type" twice in the object at /properties/a`},
		{"parameters not in UTF-8", with(func(s *toolgate.ToolSpec) { s.Parameters = json.RawMessage("{\"type\":\"object\",\"title\":\"\xc3\"}") }),
			"parameters is not valid UTF-8 (at byte 26)"},
	}
	for _, c := range cases {
		err := toolgate.CheckToolSpec(c.spec, toolgate.ToolSpecChecks{})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		if code, msg := toolgate.ErrorCode(err), toolgate.ErrorMessage(err); code != toolgate.EBadRequest || msg != c.want {
			t.Errorf("%s: %s %q, want BAD_REQUEST %q", c.name, code, msg, c.want)
		}
	}
}

// nestedParameters is a parameters schema depth objects deep: a property
// holding a property holding … (each property is two JSON levels).
func nestedParameters(depth int) json.RawMessage {
	inner, levels := `{"type":"object"}`, 1
	for ; levels+2 <= depth; levels += 2 {
		inner = `{"type":"object","properties":{"p":` + inner + `}}`
	}
	if levels < depth {
		inner = `{"type":"object","additionalProperties":` + inner + `}`
	}
	return json.RawMessage(inner)
}

// paramsAtLimits is a parameters schema MaxParametersDepth deep, with
// MaxParametersNodes objects and arrays, in at most MaxParametersBytes.
func paramsAtLimits(t *testing.T) json.RawMessage {
	// deep sits inside the top object and its properties; the objects and
	// arrays are deep's, those two, the enum's array and the enum's items.
	deep := string(nestedParameters(toolgate.MaxParametersDepth - 2))
	fixed := strings.Count(deep, "{") + 3
	items := toolgate.MaxParametersNodes - fixed
	raw := `{"type":"object","properties":{"deep":` + deep + `},"enum":[` + strings.Repeat("{},", items-1) + `{}]}`
	if len(raw) > toolgate.MaxParametersBytes {
		t.Fatalf("the schema at the limits is %d bytes", len(raw))
	}
	return json.RawMessage(raw)
}

// TestCheckToolSpecRunsTheGatewaysChecksInPlace: Admit comes right after
// the name and its error is returned as it is; a set timeout_ms goes to
// Timeout, whose message follows "timeout_ms: "; each check sees only a
// spec that passed the rules before it.
func TestCheckToolSpecRunsTheGatewaysChecksInPlace(t *testing.T) {
	var admitted, timed []string
	checks := toolgate.ToolSpecChecks{
		Admit: func(spec toolgate.ToolSpec) error {
			admitted = append(admitted, spec.Name)
			if spec.Name == "builtin_clock" {
				return toolgate.Errorf(toolgate.EConflict, "name is taken by a built-in tool")
			}
			return nil
		},
		Timeout: func(ms int64) error {
			timed = append(timed, strconv.FormatInt(ms, 10))
			if ms < 1000 {
				return toolgate.Errorf(toolgate.EBadRequest, "%d ms is outside this gateway's bounds [1000, 60000] ms", ms)
			}
			return nil
		},
	}
	cases := []struct {
		spec      toolgate.ToolSpec
		code, msg string
	}{
		{toolgate.ToolSpec{Name: "bad name", Description: ""}, toolgate.EBadRequest, "name must match ^[A-Za-z0-9_-]{1,64}$"},
		{toolgate.ToolSpec{Name: "builtin_clock", Description: ""}, toolgate.EConflict, "name is taken by a built-in tool"},
		{toolgate.ToolSpec{Name: "quick", Description: "", TimeoutMS: 10}, toolgate.EBadRequest, "description is required"},
		{toolgate.ToolSpec{Name: "quick", Description: "d", TimeoutMS: -5, RequiresApproval: "sometimes"}, toolgate.EBadRequest,
			"timeout_ms: -5 ms is outside this gateway's bounds [1000, 60000] ms"},
		{toolgate.ToolSpec{Name: "slow", Description: "d", TimeoutMS: 5000}, "", ""},
	}
	for _, c := range cases {
		err := toolgate.CheckToolSpec(c.spec, checks)
		if code, msg := toolgate.ErrorCode(err), toolgate.ErrorMessage(err); code != c.code || msg != c.msg {
			t.Errorf("%s: %s %q, want %s %q", c.spec.Name, code, msg, c.code, c.msg)
		}
	}
	if got := strings.Join(admitted, ","); got != "builtin_clock,quick,quick,slow" {
		t.Errorf("Admit saw %s", got)
	}
	if got := strings.Join(timed, ","); got != "-5,5000" {
		t.Errorf("Timeout saw %s", got)
	}
}

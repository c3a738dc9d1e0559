package toolgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
)

// specBudget is the CPU time checking a tool of a few KB may cost.
const specBudget = 100 * time.Millisecond

// hostileParameters are parameters seeds: schemas as tools declare them,
// and what a client should never get through.
var hostileParameters = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}}`,
	` {"type" : "object"} `, `{"type":["object"]}`, `{"type":"array"}`, `{"Type":"object"}`,
	`{"type":"object"} {}`, `{"type":"object"}x`, `{"type":"object"`, `[{"type":"object"}]`,
	`"object"`, `null`, ``, `{"type":"obj\u0065ct"}`, `{"type":"object","type":"string"}`,
	"{\"type\":\"object\",\"d\":\"\xff\"}", `{"type":"object","n":1e999}`,
	`{"type":"object","p":` + strings.Repeat(`{"a":`, 800) + `1` + strings.Repeat(`}`, 800) + `}`,
	`{"type":"object","p":` + strings.Repeat(`[`, 3000) + strings.Repeat(`]`, 3000) + `}`,
}

// FuzzCheckToolParameters checks any bytes as a tool's parameters: it
// never panics, takes no longer than specBudget, refuses with BAD_REQUEST
// and a message, and accepts only one valid JSON object whose top-level
// "type" is "object".
func FuzzCheckToolParameters(f *testing.F) {
	for _, seed := range hostileParameters {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var err error
		if spent := cputime.Spent(func() { err = toolgate.CheckToolParameters(raw) }); spent > specBudget {
			t.Fatalf("checking %d bytes of parameters took %s of CPU", len(raw), spent)
		}
		if err != nil {
			wantBadRequest(t, "parameters", raw, err)
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("parameters %q accepted, but they are not valid JSON", raw)
		}
		// A map, for the exact key (a struct field would also match "TYPE");
		// numbers as written (1e999 is valid JSON, but no float64).
		var top map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&top); err != nil || top["type"] != "object" {
			t.Fatalf(`parameters %q accepted without the top-level "type": "object" (%v)`, raw, err)
		}
	})
}

// FuzzCheckToolSpec checks any tool a client could register: it never
// panics, takes no longer than specBudget, refuses with BAD_REQUEST and a
// message, and a tool it accepts is accepted again after a trip through
// JSON (as the SDK sends it and the gateway reads it).
func FuzzCheckToolSpec(f *testing.F) {
	for i, params := range hostileParameters {
		f.Add("echo", "Echo the text back", int64(5000), "never", int64(2), int64(0), []byte(params))
		if i < 3 {
			f.Add("a.b-c_d", " ", int64(-1), "sometimes", int64(-1), int64(9), []byte(params))
		}
	}
	f.Add("", "", int64(0), "", int64(0), int64(0), []byte(nil))
	f.Add(strings.Repeat("n", 200), strings.Repeat("é", 5000), int64(1)<<62, "always", int64(0), int64(-5), []byte("null"))
	f.Add("e\u0301cho", "\xff\xfe", int64(0), "unless_auto_approved", int64(0), int64(0), []byte(`{"type":"object"}`))
	f.Fuzz(func(t *testing.T, name, description string, timeoutMS int64, approval string, perMinute, perHour int64, params []byte) {
		spec := toolgate.ToolSpec{
			Name: name, Description: description, TimeoutMS: timeoutMS,
			RequiresApproval: toolgate.Approval(approval), Parameters: params,
		}
		if perMinute != 0 || perHour != 0 {
			spec.RateLimit = &toolgate.RateLimit{RequestsPerMinute: int(perMinute), RequestsPerHour: int(perHour)}
		}
		var err error
		if spent := cputime.Spent(func() { err = toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{}) }); spent > specBudget {
			t.Fatalf("checking a tool of %d bytes took %s of CPU", len(name)+len(description)+len(params), spent)
		}
		if err != nil {
			wantBadRequest(t, "tool", []byte(name), err)
			return
		}
		sent, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("accepted tool %+v does not encode: %v", spec, err)
		}
		var received toolgate.ToolSpec
		if err := json.NewDecoder(bytes.NewReader(sent)).Decode(&received); err != nil {
			t.Fatalf("accepted tool encoded as %s does not decode: %v", sent, err)
		}
		if err := toolgate.CheckToolSpec(received, toolgate.ToolSpecChecks{}); err != nil {
			t.Fatalf("tool %s accepted, then refused after a trip through JSON: %v", sent, err)
		}
	})
}

// wantBadRequest fails the test unless err is a *toolgate.Error with
// BAD_REQUEST and a message.
func wantBadRequest(t *testing.T, what string, input []byte, err error) {
	t.Helper()
	var te *toolgate.Error
	if !errors.As(err, &te) || te.Code != toolgate.EBadRequest || te.Message == "" {
		t.Fatalf("%s %q refused with %v, want BAD_REQUEST with a message", what, input, err)
	}
}

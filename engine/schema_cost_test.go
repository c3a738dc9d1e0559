package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/toolgate/toolgate"
)

// expChainParameters is the review's 1.5 KB schema: n $defs, each anyOf
// two $refs to the next, the last {"type":"null"}. Validating {} against
// it walks 2^n subschemas: n=20 took 11.5 s of CPU and 2 GB of heap.
func expChainParameters(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"null"}`, n))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"allOf":[{"$ref":"#/$defs/d0"}]}`
}

// recursiveAnyOfParameters is the review's recursive schema: each level
// of args {"x":{"x":…}} is checked against both branches of an anyOf, so
// the work doubles with each level (16.6 s at depth 18; args may nest 128).
const recursiveAnyOfParameters = `{"type":"object","$defs":{"t":{"anyOf":[` +
	`{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}},"required":["y"]},` +
	`{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}},"required":["z"]}]}},"allOf":[{"$ref":"#/$defs/t"}]}`

// manyPatternsParameters is the review's 63 KB schema: 185 properties,
// each a pattern of thirty \pL{1000}: it took 2–3 s to compile and kept
// about 300 MB of heap.
func manyPatternsParameters(title string) string {
	var props []string
	for i := range 185 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","pattern":%q}`, i, strings.Repeat(`\pL{1000}`, 30)+fmt.Sprint(i)))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"title":"` + title + `"}`
}

// TestCostlySchemasAreRefused: a registration of the review's schemas —
// the exponential $ref chain, the recursive anyOf, the unbounded patterns —
// rejects each with BAD_REQUEST and why, compiling none of them, while a
// fine tool beside them is registered. (Before, all three were registered.)
func TestCostlySchemasAreRefused(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	e := srv.Engine
	ctx := context.Background()
	s, err := e.Sessions.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Tools.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{
		{Name: "exp20", Description: "x", Parameters: json.RawMessage(expChainParameters(20))},
		{Name: "recursive", Description: "x", Parameters: json.RawMessage(recursiveAnyOfParameters)},
		{Name: "pat1", Description: "d", Parameters: json.RawMessage(manyPatternsParameters("1"))},
		{Name: "echo", Description: "fine", Parameters: json.RawMessage(textSchema)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"exp20":     "subschema evaluations",
		"recursive": "subschema evaluations",
		"pat1":      "bytes of patterns",
	}
	if res.Registered != 1 || len(res.Rejected) != len(want) {
		t.Fatalf("registered %d, rejected %+v; want echo registered, the others rejected", res.Registered, res.Rejected)
	}
	for _, r := range res.Rejected {
		if r.Code != toolgate.EBadRequest || !strings.Contains(r.Message, want[r.Name]) {
			t.Errorf("%s rejected %s %q, want BAD_REQUEST with %q", r.Name, r.Code, r.Message, want[r.Name])
		}
	}
	if n := e.core.schemas.compiles.Load(); n != 1 {
		t.Errorf("%d schemas compiled, want 1 (echo's)", n)
	}
}

// TestCostBoundHoldsForValidation: the costliest schemas the bound lets
// through validate args in milliseconds — the exponential chain just
// below the bound against {}, and against 1,000 such items.
func TestCostBoundHoldsForValidation(t *testing.T) {
	n := 1
	for toolgate.CheckToolParameters(json.RawMessage(expChainParameters(n+1))) == nil {
		n++
	}
	sch, err := compileSchema(json.RawMessage(expChainParameters(n)))
	if err != nil {
		t.Fatal(err)
	}
	entry := &toolEntry{spec: toolgate.ToolSpec{Name: "exp"}}
	entry.compiled.Store(&compiledSchema{schema: sch})
	start := time.Now()
	_ = entry.validateArgs(context.Background(), json.RawMessage(`{}`))
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("the chain of %d (the longest accepted) took %v to validate {}", n, d)
	}
}

// Realistic tool schemas, as the Go SDK's users and zod's users write
// them, all far inside MaxSchemaEvaluations.
type (
	address struct {
		Street  string  `json:"street"`
		City    string  `json:"city"`
		Country string  `json:"country" jsonschema:"enum=FR,enum=DE,enum=US"`
		Zip     *string `json:"zip,omitempty"`
	}
	person struct {
		Name     string            `json:"name" jsonschema:"minLength=1"`
		Email    string            `json:"email" jsonschema:"format=email"`
		Phone    string            `json:"phone,omitempty" jsonschema:"pattern=^\\+[0-9]{6\\,15}$"`
		Home     address           `json:"home"`
		Work     *address          `json:"work,omitempty"`
		Tags     []string          `json:"tags,omitempty"`
		Extra    map[string]string `json:"extra,omitempty"`
		Children []person          `json:"children,omitempty"`
		Manager  *person           `json:"manager,omitempty"`
	}
	createOrder struct {
		Customer person `json:"customer"`
		Lines    []struct {
			SKU      string   `json:"sku"`
			Quantity int      `json:"quantity" jsonschema:"minimum=1"`
			Options  []string `json:"options,omitempty"`
			Discount *float64 `json:"discount,omitempty"`
		} `json:"lines"`
		Billing  address    `json:"billing"`
		Shipping *address   `json:"shipping,omitempty"`
		Notes    string     `json:"notes,omitempty"`
		When     *time.Time `json:"when,omitempty"`
	}
	treeNode struct {
		Label    string     `json:"label"`
		Children []treeNode `json:"children,omitempty"`
		Left     *treeNode  `json:"left,omitempty"`
		Right    *treeNode  `json:"right,omitempty"`
	}
)

// realisticSchemas are tool schemas as they are written: invopop/jsonschema
// from Go structs (with $defs and $refs, recursive types too, and
// inlined), and the shapes zod-to-json-schema writes (nullable anyOf,
// discriminated unions, a recursive filter expression).
func realisticSchemas(t testing.TB) map[string]string {
	out := map[string]string{}
	// Inlined, the top-level struct expanded (as agentloop.ReflectSchema
	// does); with $defs, the top level a $ref beside "type": "object", as
	// the protocol asks.
	reflect := func(name string, v any, inline bool) {
		r := &jsonschema.Reflector{DoNotReference: inline, ExpandedStruct: inline}
		s := r.Reflect(v)
		s.Version, s.ID = "", ""
		if !inline {
			s.Type = "object"
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	reflect("invopop: an order, $defs", &createOrder{}, false)
	reflect("invopop: a person (recursive), $defs", &person{}, false)
	reflect("invopop: a tree (recursive), $defs", &treeNode{}, false)
	reflect("invopop: an address, inlined", &address{}, true)

	nullable := func(s string) string { return `{"anyOf":[` + s + `,{"type":"null"}]}` }
	var variants []string
	for i := range 12 {
		variants = append(variants, fmt.Sprintf(`{"type":"object","properties":{"kind":{"type":"string","const":"k%d"},"value":%s,"meta":%s},"required":["kind"],"additionalProperties":false}`,
			i, nullable(`{"type":"string"}`), nullable(`{"type":"object","additionalProperties":`+nullable(`{"type":"number"}`)+`}`)))
	}
	out["zod: a discriminated union of 12, nullable members"] = `{"type":"object","properties":{"action":{"anyOf":[` + strings.Join(variants, ",") +
		`]},"items":{"type":"array","items":` + nullable(`{"anyOf":[`+strings.Join(variants, ",")+`]}`) + `}},"required":["action"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`
	// zod-to-json-schema's recursive filter: {and:[f…]} | {or:[f…]} | {not:f} | {field, op, value}.
	out["zod: a recursive filter expression"] = `{"type":"object","properties":{"filter":{"$ref":"#/definitions/filter"}},"definitions":{"filter":{"anyOf":[` +
		`{"type":"object","properties":{"and":{"type":"array","items":{"$ref":"#/definitions/filter"}}},"required":["and"],"additionalProperties":false},` +
		`{"type":"object","properties":{"or":{"type":"array","items":{"$ref":"#/definitions/filter"}}},"required":["or"],"additionalProperties":false},` +
		`{"type":"object","properties":{"not":{"$ref":"#/definitions/filter"}},"required":["not"],"additionalProperties":false},` +
		`{"type":"object","properties":{"field":{"type":"string"},"op":{"type":"string","enum":["eq","ne","lt","gt","in"]},"value":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"null"},{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"number"}]}}]}},"required":["field","op"],"additionalProperties":false}` +
		`]}},"$schema":"http://json-schema.org/draft-07/schema#"}`
	return out
}

// TestRealisticSchemasAreAccepted: every realistic schema passes the
// limits and compiles, with room to spare.
func TestRealisticSchemasAreAccepted(t *testing.T) {
	for name, raw := range realisticSchemas(t) {
		if err := toolgate.CheckToolParameters(json.RawMessage(raw)); err != nil {
			t.Errorf("%s is refused: %v\n%s", name, err, raw)
			continue
		}
		if _, err := compileSchema(json.RawMessage(raw)); err != nil {
			t.Errorf("%s does not compile: %v", name, err)
		}
		if dir := os.Getenv("TOOLGATE_DUMP_SCHEMAS"); dir != "" {
			_ = os.WriteFile(dir+"/"+strings.NewReplacer(" ", "_", ":", "", ",", "", "(", "", ")", "", "$", "").Replace(name)+".json", []byte(raw), 0o644)
		}
	}
}

// patternsParameters is a schema of n string properties, each with the
// given pattern.
func patternsParameters(n int, pattern string) string {
	var props []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","pattern":%q}`, i, pattern))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// TestRegexpProgramsAreBounded: a pattern short enough for the length
// limits but whose program is over the limit is refused when the schema
// compiles, and so are patterns that are each within it but together
// over the schema's; a format "regex" string of args too. (Before, the
// review's 63 KB schema of such patterns compiled in 2–3 s and kept
// 300 MB.)
func TestRegexpProgramsAreBounded(t *testing.T) {
	const nearLimit = `\pL{999}\pL{997}` // 1,998 instructions
	cases := map[string]struct {
		schema string
		want   string
	}{
		"one program too large":    {patternsParameters(1, `^\pL{999}\pL{999}\pL{999}$`), "compiles to 3001 instructions; the limit is 2000"},
		"a patternProperties name": {`{"type":"object","patternProperties":{"\\pL{999}\\pL{999}\\pL{999}":{}}}`, "instructions; the limit is 2000"},
		"too much together":        {patternsParameters(maxSchemaRegexpInsts/1998+1, nearLimit), "instructions in all"},
	}
	for name, c := range cases {
		if err := toolgate.CheckToolParameters(json.RawMessage(c.schema)); err != nil {
			t.Fatalf("%s: refused before compiling: %v", name, err)
		}
		if _, err := compileSchema(json.RawMessage(c.schema)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if _, err := compileSchema(json.RawMessage(patternsParameters(maxSchemaRegexpInsts/2/1998, nearLimit))); err != nil {
		t.Errorf("patterns within the limits: %v", err)
	}

	// Args checked with "format": "regex" (asserted in draft 7) meet the
	// same engine, after the compile too.
	sch, err := compileSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"re":{"type":"string","format":"regex"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	entry := &toolEntry{spec: toolgate.ToolSpec{Name: "grep"}}
	entry.compiled.Store(&compiledSchema{schema: sch})
	for range 30 { // more than the schema's total, one call after another
		if err := entry.validateArgs(context.Background(), json.RawMessage(`{"re":"\\pL{999}\\pL{997}"}`)); err != nil {
			t.Fatalf("a regex within the limits: %v", err)
		}
	}
	err = entry.validateArgs(context.Background(), json.RawMessage(`{"re":"\\pL{999}\\pL{999}\\pL{999}"}`))
	if toolgate.ErrorCode(err) != toolgate.EInvalidArgs || !strings.Contains(toolgate.ErrorMessage(err), "instructions") {
		t.Errorf("a regex over the limit in args: %v", err)
	}
}

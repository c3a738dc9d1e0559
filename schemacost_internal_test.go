package toolgate

import (
	"fmt"
	"strings"
	"testing"
)

// expChain is the review's schema: n $defs, each anyOf two $refs to the
// next, the last {"type":"null"} — 2^n evaluations of {} in 1.5 KB.
func expChain(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"null"}`, n))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"allOf":[{"$ref":"#/$defs/d0"}]}`
}

// TestSchemaEvaluations pins the bound of shapes whose count is known.
func TestSchemaEvaluations(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   int64
	}{
		{"the default", `{"type":"object"}`, 1},
		// W(d3)=1, W(d_i)=1+2·(1+W(d_{i+1})) (each $ref node, then its
		// target); the top level and its allOf item add 2.
		{"an anyOf chain of 3", expChain(3), 2 + (1 + 2*(1+(1+2*(1+(1+2*(1+1))))))},
		// One path of args goes down one property at a time: the widest
		// object costs its most costly member, not the sum.
		{"properties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, 1 + 3},
		// A tree type: 127 levels below the top, each pair of levels (a
		// node's children, then an item) costs 3 (children, the item's
		// $ref, the node); the top is 2 (itself and n).
		{"a recursive tree", `{"type":"object","$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`, 2 + 3*63 + 1},
		// The variants of an anyOf that each take their own property add
		// up only for that property: a filter of and/or/not stays linear.
		{"a recursive filter", `{"type":"object","$ref":"#/$defs/f","$defs":{"f":{"anyOf":[` +
			`{"properties":{"and":{"items":{"$ref":"#/$defs/f"}}},"additionalProperties":false},` +
			`{"properties":{"not":{"$ref":"#/$defs/f"}},"additionalProperties":false}]}}}`, 0},
	}
	for _, c := range cases {
		got, err := schemaEvaluations([]byte(c.schema))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.want != 0 && got != c.want {
			t.Errorf("%s: %d evaluations, want %d", c.name, got, c.want)
		}
		t.Logf("%s: %d", c.name, got)
	}
}

// TestSchemaCostRefusals: the shapes refused, each with its reason.
func TestSchemaCostRefusals(t *testing.T) {
	cases := []struct{ name, schema, want string }{
		{"an anyOf chain of 20 (2^20)", expChain(20), "subschema evaluations"},
		{"an anyOf chain of 11", expChain(11), "subschema evaluations"},
		{"recursion through anyOf, twice a level", `{"type":"object","$defs":{"t":{"anyOf":[` +
			`{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}},"required":["y"]},` +
			`{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}},"required":["z"]}]}},"allOf":[{"$ref":"#/$defs/t"}]}`, "subschema evaluations"},
		{"a $ref to itself", `{"type":"object","$ref":"#"}`, "subschema evaluations"},
		{"a cycle through allOf", `{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, "subschema evaluations"},
		{"a $ref outside", `{"type":"object","$ref":"https://json-schema.org/draft/2020-12/schema"}`, "points outside it"},
		{"a $ref to nothing", `{"type":"object","$ref":"#/$defs/missing"}`, "does not hold"},
		{"a $ref to a missing anchor", `{"type":"object","$ref":"#nowhere"}`, "anchor it does not define"},
		{"a pattern too long", `{"type":"object","properties":{"s":{"pattern":"` + strings.Repeat("a", MaxPatternLength+1) + `"}}}`, "pattern of 1025 bytes at /properties/s/pattern"},
		{"a patternProperties name too long", `{"type":"object","patternProperties":{"` + strings.Repeat("a", MaxPatternLength+1) + `":{}}}`, "pattern of 1025 bytes"},
		{"too many pattern bytes", `{"type":"object","properties":{` + manyPatterns(17, 1000) + `}}`, "more than 16384 bytes of patterns"},
	}
	for _, c := range cases {
		err := checkSchemaCost([]byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// Resolved where the schema says: $anchor, an embedded $id, a pointer
	// into an embedded resource, draft-7 definitions and a "#name" $id.
	for name, schema := range map[string]string{
		"$anchor":               `{"type":"object","$defs":{"a":{"$anchor":"here","type":"string"}},"properties":{"x":{"$ref":"#here"}}}`,
		"embedded $id":          `{"$id":"https://example.com/root.json","type":"object","$defs":{"a":{"$id":"item.json","type":"string"}},"properties":{"x":{"$ref":"item.json"}}}`,
		"pointer in a resource": `{"$id":"https://example.com/root.json","type":"object","$defs":{"a":{"$id":"other.json","$defs":{"b":{"type":"string"}}}},"properties":{"x":{"$ref":"other.json#/$defs/b"}}}`,
		"draft-7":               `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"a":{"$id":"#named","type":"string"}},"properties":{"x":{"$ref":"#named"},"y":{"$ref":"#/definitions/a"}}}`,
		"patterns at the limit": `{"type":"object","properties":{` + manyPatterns(16, 1024) + `}}`,
	} {
		if err := checkSchemaCost([]byte(schema)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// manyPatterns is n properties, each a pattern of size bytes.
func manyPatterns(n, size int) string {
	var props []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"pattern":"%s"}`, i, strings.Repeat("a", size)))
	}
	return strings.Join(props, ",")
}

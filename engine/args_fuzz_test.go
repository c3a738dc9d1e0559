package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
)

// fuzzedSchemas are the parameters FuzzValidateArgs checks arguments
// against: the default, the usual shapes, and the keywords whose
// validation costs the most (patterns, formats, uniqueness, combinators,
// recursion through $ref).
var fuzzedSchemas = []string{
	`{"type":"object"}`,
	textSchema,
	`{"type":"object","properties":{
		"email":{"type":"string","format":"email"},
		"when":{"type":"string","format":"date-time"},
		"site":{"type":"string","format":"uri"},
		"code":{"type":"string","pattern":"^(a+)+b$","maxLength":64},
		"n":{"type":"integer","minimum":-10,"maximum":1e9,"multipleOf":0.5}},
	 "additionalProperties":false}`,
	`{"type":"object","properties":{
		"items":{"type":"array","uniqueItems":true,"maxItems":500,
			"items":{"oneOf":[{"type":"string"},{"type":"number"},{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}]}},
		"kind":{"enum":["a","b",{"x":[1,2]}]}},
	 "required":["items"],
	 "patternProperties":{"^x-":{"type":"boolean"}},
	 "dependentRequired":{"kind":["items"]}}`,
	`{"type":"object","$defs":{"node":{"type":"object","properties":{
		"value":{"type":"number"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},
	 "properties":{"tree":{"$ref":"#/$defs/node"}},
	 "not":{"required":["forbidden"]},
	 "if":{"properties":{"mode":{"const":"strict"}}},"then":{"required":["tree"]}}`,
}

// argsBudget is the CPU time validating arguments of a few KB may cost.
const argsBudget = 100 * time.Millisecond

// FuzzValidateArgs validates any bytes as a call's arguments against each
// of fuzzedSchemas: it never panics, takes no longer than argsBudget,
// refuses with INVALID_ARGS and a message, and accepts only valid JSON.
func FuzzValidateArgs(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"text":"hello"}`, `{"text":1}`, `{"text":"\u00e9\ud83d\ude00"}`,
		`{"email":"a@b.c","when":"2026-01-02T03:04:05Z","site":"https://x.y/z","code":"aab","n":4.5}`,
		`{"code":"` + strings.Repeat("a", 60) + `c"}`,
		`{"items":[1,"1",{"a":1},{"a":1.0}],"kind":{"x":[1,2]},"x-on":true}`,
		`{"items":[` + strings.Repeat(`{"k":[1,2,3]},`, 200) + `0]}`,
		`{"tree":{"value":1,"children":[{"value":2,"children":[{"value":3}]}]},"mode":"strict"}`,
		`{"tree":` + strings.Repeat(`{"children":[`, 150) + strings.Repeat(`]}`, 150) + `}`,
		// Hostile: not an object, not JSON, two values, huge numbers, bad UTF-8.
		``, `null`, `[]`, `"x"`, `{`, `{} {}`, `{"n":1e400}`, `{"n":-0}`, `{"a":1,"a":2}`,
		"{\"text\":\"\xff\"}", `{"text":"\ud800"}`, strings.Repeat(`[`, 3000),
	} {
		for i := range fuzzedSchemas {
			f.Add([]byte(seed), uint8(i))
		}
	}
	entries := make([]*toolEntry, len(fuzzedSchemas))
	schemas := newSchemaCache()
	for i, raw := range fuzzedSchemas {
		entry, err := newToolEntry(schemas, toolgate.ToolSpec{Name: "fuzzed", Parameters: json.RawMessage(raw)}, time.Time{})
		if err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		entries[i] = entry
	}
	f.Fuzz(func(t *testing.T, args []byte, which uint8) {
		entry := entries[int(which)%len(entries)]
		var err error
		if spent := cputime.Spent(func() { err = entry.validateArgs(context.Background(), args) }); spent > argsBudget {
			t.Fatalf("validating %d bytes of args took %s of CPU", len(args), spent)
		}
		if err == nil {
			if !json.Valid(args) {
				t.Fatalf("args %q accepted, but they are not valid JSON", args)
			}
			return
		}
		var te *toolgate.Error
		// Args that are not strict JSON (toolgate.CheckStrictJSON) are
		// BAD_REQUEST; args that do not match the schema INVALID_ARGS.
		if !errors.As(err, &te) || (te.Code != toolgate.EInvalidArgs && te.Code != toolgate.EBadRequest) || te.Message == "" {
			t.Fatalf("args %q refused with %v, want INVALID_ARGS or BAD_REQUEST with a message", args, err)
		}
	})
}

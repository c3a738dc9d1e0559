package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
)

// worstSchemas are parameters schemas at toolgate's limits (64 KiB, 64
// levels, 1024 objects and arrays), each of a shape that makes the
// compiler work: the slowest of them bounds what one registered tool can
// cost. BENCHMARKS.md, "Tool schemas: the limits and their worst case",
// has their figures.
func worstSchemas() map[string]string {
	// fill is prefix, up to max items joined by sep, and suffix, in at
	// most MaxParametersBytes.
	fill := func(prefix, item, sep, suffix string, max int) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; ; i++ {
			next := fmt.Sprintf(item, i)
			if i > 0 {
				next = sep + next
			}
			if i >= max || b.Len()+len(next)+len(suffix) > toolgate.MaxParametersBytes {
				break
			}
			b.WriteString(next)
		}
		b.WriteString(suffix)
		return b.String()
	}
	// Properties nested to the depth limit (31 deep), beside the widest
	// object that still fits the node limit.
	deep := strings.Repeat(`{"type":"object","properties":{"p":`, 31) + `{"type":"object"}` + strings.Repeat(`}}`, 31)
	return map[string]string{
		"nested to the depth limit": deep,
		"the most properties": fill(`{"type":"object","properties":{`, `"p%d":{"type":"string","minLength":1}`, ",", `}}`,
			toolgate.MaxParametersNodes-2),
		"nested allOf chains": `{"type":"object","properties":{` +
			fill("", `"p%d":`+strings.Repeat(`{"allOf":[`, 30)+`{}`+strings.Repeat(`]}`, 30), ",", "", (toolgate.MaxParametersNodes-2)/61) + `}}`,
		// The longest anyOf chain of $refs within the cost bound (each
		// level doubles the walks), and recursion as deep as args go.
		"an anyOf chain at the cost bound": longestAcceptedChain(),
		"recursion to the args depth": `{"type":"object","$ref":"#/$defs/f","$defs":{"f":{"anyOf":[` +
			`{"properties":{"and":{"items":{"$ref":"#/$defs/f"}}},"additionalProperties":false},` +
			`{"properties":{"or":{"items":{"$ref":"#/$defs/f"}}},"additionalProperties":false},` +
			`{"properties":{"not":{"$ref":"#/$defs/f"}},"additionalProperties":false},` +
			`{"properties":{"field":{"type":"string"},"value":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}]}},"additionalProperties":false}]}}}`,
		// As many patterns as the schema's program limit takes, each just
		// under the limit of one: \pL{999} is 8 bytes and 1,001
		// instructions (each holding the ranges of the letters).
		"patterns at the program limits": fill(`{"type":"object","properties":{`, `"p%d":{"type":"string","pattern":"\\pL{999}\\pL{997}"}`, ",", `}}`,
			maxSchemaRegexpInsts/2/1998),
		"patternProperties": fill(`{"type":"object","patternProperties":{`, `"^x%d[a-z]+$":{"type":"integer"}`, ",", `}}`,
			toolgate.MaxParametersNodes-2),
	}
}

// longestAcceptedChain is the longest anyOf chain of $refs (each level
// two $refs to the next) the cost bound accepts.
func longestAcceptedChain() string {
	n := 1
	for toolgate.CheckToolParameters(json.RawMessage(expChainParameters(n+1))) == nil {
		n++
	}
	return expChainParameters(n)
}

// BenchmarkSchemaCompileWorstCase compiles each of worstSchemas (after
// the limits' check, as a registration does).
func BenchmarkSchemaCompileWorstCase(b *testing.B) {
	for name, raw := range worstSchemas() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			if err := toolgate.CheckToolParameters([]byte(raw)); err != nil {
				b.Fatalf("%s is refused: %v", name, err)
			}
			b.SetBytes(int64(len(raw)))
			cpu0 := cputime.Process()
			for b.Loop() {
				if err := toolgate.CheckToolParameters([]byte(raw)); err != nil {
					b.Fatal(err)
				}
				if _, err := compileSchema([]byte(raw)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(retainedBytes(b, raw))/1000, "kept-KB")
		})
	}
}

// retainedBytes is the heap a compiled schema of raw keeps: HeapAlloc
// after a collection, with and without it.
func retainedBytes(b *testing.B, raw string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sch, err := compileSchema([]byte(raw))
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(sch)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkSchemaValidateWorstCase validates a small argument against each
// of worstSchemas, as every call of such a tool would.
func BenchmarkSchemaValidateWorstCase(b *testing.B) {
	args := `{"p":{"p":{"p":{}}},"p1":"x","s":"a1","x1a":1,"x":{"x":{"x":"y"}}}`
	for name, raw := range worstSchemas() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			sch, err := compileSchema([]byte(raw))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(args)))
				if err != nil {
					b.Fatal(err)
				}
				_ = sch.Validate(inst)
			}
		})
	}
}

// TestWorstSchemasPassTheLimits keeps the benchmark honest: each of its
// schemas is one a client may register.
func TestWorstSchemasPassTheLimits(t *testing.T) {
	for name, raw := range worstSchemas() {
		if err := toolgate.CheckToolParameters([]byte(raw)); err != nil {
			t.Errorf("%s (%d bytes): %.300s", name, len(raw), err)
		}
		if _, err := compileSchema([]byte(raw)); err != nil {
			t.Errorf("%s: %.300s", name, err)
		}
	}
}

// BenchmarkValidateWidestAdmittedArgs is the worst validation the width
// bound admits: the costliest accepted schema (the longest anyOf chain of
// $refs) as items, and as many items as toolgate.MaxValidationEvaluations
// lets through, each failing every branch — the whole of validateArgs,
// the error's message included.
func BenchmarkValidateWidestAdmittedArgs(b *testing.B) {
	raw := chainItemsParameters(b)
	cost, err := toolgate.SchemaEvaluations([]byte(raw))
	if err != nil {
		b.Fatal(err)
	}
	entry := storedToolEntry(newSchemaCache(), toolgate.ToolSpec{Name: "wide", Parameters: json.RawMessage(raw)}, time.Now())
	items := int(toolgate.MaxValidationEvaluations/cost.PerValue) - 2
	args := wideArgs(items, `{}`)
	b.ReportMetric(float64(items), "items")
	cpu0 := cputime.Process()
	for b.Loop() {
		if err := entry.validateArgs(context.Background(), args); toolgate.ErrorCode(err) != toolgate.EInvalidArgs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

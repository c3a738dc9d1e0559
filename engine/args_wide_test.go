package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// chainItemsParameters is the costliest accepted schema's shape as the
// schema of every item of args' "xs": the longest anyOf chain of $refs
// the cost bound accepts (each item evaluates about a thousand
// subschemas, every one failing on a non-null item).
func chainItemsParameters(t testing.TB) string {
	n := 1
	for toolgate.CheckToolParameters(json.RawMessage(chainItemsOf(n+1))) == nil {
		n++
	}
	return chainItemsOf(n)
}

// chainItemsOf is expChainParameters' chain of n levels as "items".
func chainItemsOf(n int) string {
	chain := expChainParameters(n)
	defs := chain[strings.Index(chain, `"$defs"`):strings.LastIndex(chain, `,"allOf"`)]
	return `{"type":"object",` + defs + `,"properties":{"xs":{"type":"array","items":{"$ref":"#/$defs/d0"}}}}`
}

// wideArgs is {"xs":[items of item]}.
func wideArgs(items int, item string) json.RawMessage {
	return json.RawMessage(`{"xs":[` + strings.TrimSuffix(strings.Repeat(item+",", items), ",") + `]}`)
}

// TestWideArgsAreBoundedBeforeValidating: args too wide for their tool's
// schema (values × the evaluations one value may cost over
// toolgate.MaxValidationEvaluations) are refused with PAYLOAD_TOO_LARGE
// before the validator runs — counted in evaluations, not time: the
// schema is the costliest accepted one as items, 1,000 failing items
// (about a million evaluations; before, every one ran, and 500,000 ran
// for over 10 minutes). Within the budget the same call is validated,
// and realistic calls against realistic schemas pass.
func TestWideArgsAreBoundedBeforeValidating(t *testing.T) {
	raw := chainItemsParameters(t)
	cost, err := toolgate.SchemaEvaluations([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if cost.PerValue < 500 {
		t.Fatalf("the chain's per-value bound is %d; an item evaluates about a thousand subschemas", cost.PerValue)
	}
	entry := storedToolEntry(newSchemaCache(), toolgate.ToolSpec{Name: "wide", Parameters: json.RawMessage(raw)}, time.Now())
	ctx := context.Background()

	err = entry.validateArgs(ctx, wideArgs(1000, `{}`))
	if toolgate.ErrorCode(err) != toolgate.EPayloadTooLarge {
		t.Fatalf("1,000 failing items against the chain: %v; want PAYLOAD_TOO_LARGE", err)
	}
	if msg := toolgate.ErrorMessage(err); !strings.Contains(msg, "values") || len(msg) > 500 {
		t.Errorf("the refusal does not say why, briefly: %s", msg)
	}

	// Within the budget, the validation runs (and fails, with a short message).
	fits := int(toolgate.MaxValidationEvaluations/cost.PerValue) - 2 // the object and the array
	err = entry.validateArgs(ctx, wideArgs(fits, `{}`))
	if toolgate.ErrorCode(err) != toolgate.EInvalidArgs {
		t.Fatalf("%d failing items (within the budget): %v; want INVALID_ARGS", fits, err)
	}
	if msg := toolgate.ErrorMessage(err); len(msg) > 4000 || !strings.Contains(msg, "more") {
		t.Errorf("the error of %d failing items is %d bytes, its causes not cut: %.300s", fits, len(msg), msg)
	}
	if err := entry.validateArgs(ctx, wideArgs(fits, `null`)); err != nil {
		t.Errorf("%d passing items: %v", fits, err)
	}
}

// TestRealisticArgsPassTheWidthBound: several hundred values (thousands for most) against the
// realistic schemas, and against a plain one, are within the budget.
func TestRealisticArgsPassTheWidthBound(t *testing.T) {
	for name, raw := range realisticSchemas(t) {
		cost, err := toolgate.SchemaEvaluations([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: per path %d, per value %d: %d values fit", name, cost.PerPath, cost.PerValue, toolgate.MaxValidationEvaluations/cost.PerValue)
		if values := toolgate.MaxValidationEvaluations / cost.PerValue; values < 500 {
			t.Errorf("%s: only %d values fit the budget (per value %d)", name, values, cost.PerValue)
		}
	}
}

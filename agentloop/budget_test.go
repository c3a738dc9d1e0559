package agentloop

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

func TestOverBudget(t *testing.T) {
	for _, tc := range []struct {
		max, spent, next float64
		over             bool
	}{
		{0, 1e9, 1e9, false},      // no budget
		{5, 4, 1, false},          // exactly at the budget
		{5, 4, 1.5, true},         // past it
		{5, 5.01, 0, true},        // spent past it
		{0.3, 0.1, 0.2, false},    // floating-point noise is not an overrun
		{1e12, 1e12, 1e-3, false}, // within the tolerance of a huge budget
		{1e12, 1e12, 1e4, true},
	} {
		if got := overBudget(tc.max, tc.spent, tc.next); got != tc.over {
			t.Errorf("overBudget(%v, %v, %v) = %v", tc.max, tc.spent, tc.next, got)
		}
	}
}

func TestBudgetMessages(t *testing.T) {
	e := stepBudgetError(5, 0.1+4.1, 1.5)
	want := "the run would exceed max_cost=5: it has cost 4.2 and the next calls are estimated at 1.5"
	if e.Code != toolgate.EMaxCost || e.Message != want {
		t.Errorf("step = %+v\nwant %s", e, want)
	}
	e = spentBudgetError(5, 6.5)
	if e.Code != toolgate.EMaxCost || !strings.Contains(e.Message, "has cost 6.5, past its max_cost=5") {
		t.Errorf("spent = %+v", e)
	}
	if got := formatCost(1e12); got != "1000000000000" {
		t.Errorf("formatCost(1e12) = %s", got)
	}
}

// costTool is a tool with a cost estimate of its own.
type costTool struct {
	toolgate.Tool
	estimate func(args json.RawMessage) (float64, bool)
}

func (c costTool) EstimatedCost(args json.RawMessage) (float64, bool) { return c.estimate(args) }

func TestCallEstimate(t *testing.T) {
	base := NewCurrentTimeTool(nil)
	fixed := func(v float64) toolgate.Tool {
		return costTool{base, func(json.RawMessage) (float64, bool) { return v, true }}
	}
	for _, tc := range []struct {
		tool toolgate.Tool
		want float64
	}{
		{base, 0}, // no estimate
		{fixed(2.5), 2.5},
		{fixed(-1), 0},
		{fixed(math.NaN()), 0},
		{fixed(math.Inf(1)), toolgate.MaxCost},
		{costTool{base, func(json.RawMessage) (float64, bool) { return 9, false }}, 0}, // declined
		// Per arguments.
		{costTool{base, func(a json.RawMessage) (float64, bool) { return float64(len(a)), true }}, 2},
	} {
		if got := CallEstimate(tc.tool, json.RawMessage(`{}`)); got != tc.want {
			t.Errorf("CallEstimate(%T) = %v, want %v", tc.tool, got, tc.want)
		}
	}
	// A remote tool's estimate is its spec's.
	remote := NewRemoteTool(toolgate.ToolSpec{Name: "search", EstimatedCost: 0.75}, "s", nil)
	if got := CallEstimate(remote, nil); got != 0.75 {
		t.Errorf("remote tool estimate = %v", got)
	}
	// A built-in tool's, through the gateway, is the tool's own.
	through := builtinThroughGateway(fixed(3), nil)
	if got := CallEstimate(through, nil); got != 3 {
		t.Errorf("built-in tool estimate through the gateway = %v", got)
	}
}

// costStore is a RunStore that only answers RunCost.
type costStore struct {
	RunStore
	cost func(runID, except string) (float64, error)
}

func (s costStore) RunCost(_ context.Context, runID, except string) (float64, error) {
	return s.cost(runID, except)
}

// TestCheckStepBudget: a step is weighed with the run's cost so far,
// leaving out the calls of that step (made before a restart), plus the
// estimates of the step's calls; a run without a budget is not checked.
func TestCheckStepBudget(t *testing.T) {
	reg := NewRegistry(nil)
	paid := costTool{NewFuncTool("paid", "costs", func(context.Context, struct{}) (any, error) { return nil, nil }),
		func(json.RawMessage) (float64, bool) { return 1.5, true }}
	if err := reg.AddBuiltin(paid); err != nil {
		t.Fatal(err)
	}
	var asked []string
	r := &Runner{Registry: reg, Store: costStore{cost: func(runID, except string) (float64, error) {
		asked = append(asked, except)
		return 4.2, nil
	}}}
	call := func(name, args string) toolgate.ChatToolCall {
		return toolgate.ChatToolCall{ID: "c", Function: toolgate.ChatFunctionCall{Name: name, Arguments: args}}
	}
	run := &toolgate.Run{ID: "r1", MaxCost: 5}
	stop, err := r.checkStepBudget(context.Background(), run, 3, []toolgate.ChatToolCall{call("paid", "{}")})
	if err != nil || stop == nil || stop.Code != toolgate.EMaxCost {
		t.Fatalf("over budget: %v %v", stop, err)
	}
	if len(asked) != 1 || asked[0] != "run:r1:3:" {
		t.Errorf("cost read leaving out %q", asked)
	}
	// Arguments that are not JSON make no call, and cost nothing.
	if stop, err := r.checkStepBudget(context.Background(), run, 3, []toolgate.ChatToolCall{call("paid", "{nope"), call("unknown", "")}); stop != nil || err != nil {
		t.Errorf("within budget: %v %v", stop, err)
	}
	asked = nil
	if stop, err := r.checkStepBudget(context.Background(), &toolgate.Run{ID: "r2"}, 1, []toolgate.ChatToolCall{call("paid", "{}")}); stop != nil || err != nil || len(asked) != 0 {
		t.Errorf("no budget: %v %v, cost read %d times", stop, err, len(asked))
	}
}

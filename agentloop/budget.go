package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate"
)

// A run's budget. A run started with max_cost above zero stops, failed
// with MAX_COST, at the first of two checks that finds it over:
//
//   - before a step's tool calls are made: what the run has cost so far
//     plus the estimates of the step's calls would pass max_cost (the
//     calls are not made);
//   - before the model is asked again: what the run has cost (reported
//     costs, else estimates) has passed max_cost — a call that cost more
//     than its estimate takes the run past its budget, and the model is
//     not asked to go on.
//
// Both run between steps, when none of the run's calls is in flight. A
// run's cost is read from its stored calls (RunStore.RunCost), so the
// checks decide the same after a restart: a run that stopped for its
// budget is failed and stays failed, and one that resumes in the middle
// of a step counts the step's calls made before the restart at their
// estimates, as it did the first time, not twice.

// costTolerance is how far past max_cost a sum of floating-point costs may
// be and still count as within it: 0.1 + 0.2 must fit a budget of 0.3.
const costTolerance = 1e-9

// overBudget reports whether spent plus next passes maxCost; a maxCost of
// zero is no budget.
func overBudget(maxCost, spent, next float64) bool {
	return maxCost > 0 && spent+next > maxCost+costTolerance*math.Max(1, maxCost)
}

// stepBudgetError is the reason a run stops before a step whose calls'
// estimates would take it past its budget.
func stepBudgetError(maxCost, spent, next float64) *toolgate.CallError {
	return &toolgate.CallError{Code: toolgate.EMaxCost, Message: fmt.Sprintf(
		"the run would exceed max_cost=%s: it has cost %s and the next calls are estimated at %s",
		formatCost(maxCost), formatCost(spent), formatCost(next))}
}

// spentBudgetError is the reason a run stops when what it has cost has
// passed its budget: the model is not asked again.
func spentBudgetError(maxCost, spent float64) *toolgate.CallError {
	return &toolgate.CallError{Code: toolgate.EMaxCost, Message: fmt.Sprintf(
		"the run has cost %s, past its max_cost=%s; the model is not asked again",
		formatCost(spent), formatCost(maxCost))}
}

// formatCost writes a cost for a person: at most six decimals, no
// floating-point noise (4.2, not 4.200000000000001).
func formatCost(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// CallEstimate returns what a call of t with args is estimated to cost:
// the tool's estimate (CostEstimator), zero when it gives none or gives
// something that is not a cost (negative, NaN), and at most
// toolgate.MaxCost.
func CallEstimate(t toolgate.Tool, args json.RawMessage) float64 {
	_, c := toolgate.Estimates(t, args)
	switch {
	case math.IsNaN(c) || c < 0:
		return 0
	case c > toolgate.MaxCost:
		return toolgate.MaxCost
	}
	return c
}

// stepKeyPrefix is how the idempotency keys runTool gives the calls of one
// step of a run begin ("run:RUN:STEP:INDEX:TOOL_CALL_ID").
func stepKeyPrefix(runID string, step int) string {
	return fmt.Sprintf("run:%s:%d:", runID, step)
}

// stepEstimate is the sum of the estimates of a step's tool calls, each
// tool found as the run would call it: the session's tools with their
// specs (a remote tool's estimated_cost is in its spec), else Resolve.
func (r *Runner) stepEstimate(ctx context.Context, run *toolgate.Run, calls []toolgate.ChatToolCall) float64 {
	known := map[string]toolgate.Tool{}
	if tools, err := r.Registry.ToolsFor(ctx, r.Directory, r.Dispatcher, run.SessionID); err == nil {
		for _, t := range tools {
			known[t.Name()] = t
		}
	}
	var sum float64
	for _, tc := range calls {
		args := strings.TrimSpace(tc.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			continue // never made: runTool refuses the arguments
		}
		t, ok := known[tc.Function.Name]
		if !ok {
			t = r.Registry.Resolve(tc.Function.Name, run.SessionID, r.Dispatcher)
		}
		sum += CallEstimate(t, json.RawMessage(args))
	}
	return sum
}

// checkStepBudget decides, before a step's calls are made, whether they
// fit the run's budget; it returns the reason to stop when they do not,
// or when the run's cost cannot be read. A run without a budget is not
// checked.
func (r *Runner) checkStepBudget(ctx context.Context, run *toolgate.Run, step int, calls []toolgate.ChatToolCall) (*toolgate.CallError, error) {
	if run.MaxCost <= 0 {
		return nil, nil
	}
	// The step's calls made before a restart are counted below, at their
	// estimates, as the first decision counted them.
	spent, err := r.Store.RunCost(ctx, run.ID, stepKeyPrefix(run.ID, step))
	if err != nil {
		return nil, err
	}
	next := r.stepEstimate(ctx, run, calls)
	if overBudget(run.MaxCost, spent, next) {
		return stepBudgetError(run.MaxCost, spent, next), nil
	}
	return nil, nil
}

// updateCost reads what the run has cost into run.Cost (shown in the run
// summaries of its events) and returns the reason to stop when that has
// passed its budget.
func (r *Runner) updateCost(ctx context.Context, run *toolgate.Run) (*toolgate.CallError, error) {
	spent, err := r.Store.RunCost(ctx, run.ID, "")
	if err != nil {
		return nil, err
	}
	run.Cost = spent
	if overBudget(run.MaxCost, spent, 0) {
		return spentBudgetError(run.MaxCost, spent), nil
	}
	return nil, nil
}

package toolgate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// tracedTool is a tool with every optional trait.
type tracedTool struct{}

func (tracedTool) Name() string                { return "traced" }
func (tracedTool) Description() string         { return "has every trait" }
func (tracedTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (tracedTool) Execute(context.Context, json.RawMessage) (toolgate.Result, error) {
	return toolgate.Result{Output: json.RawMessage(`1`)}, nil
}
func (tracedTool) Timeout() time.Duration              { return 1500 * time.Millisecond }
func (tracedTool) RequiresApproval() toolgate.Approval { return toolgate.ApprovalAlways }
func (tracedTool) RateLimit() *toolgate.RateLimit {
	return &toolgate.RateLimit{RequestsPerMinute: 2}
}
func (tracedTool) ReadOnly() bool             { return true }
func (tracedTool) RequiresSanitization() bool { return false }
func (tracedTool) EstimatedDuration(json.RawMessage) (time.Duration, bool) {
	return time.Second, true
}
func (tracedTool) EstimatedCost(json.RawMessage) (float64, bool) { return 0.5, true }

// plainTool has no optional trait.
type plainTool struct{ tracedTool }

func (plainTool) Name() string { return "plain" }

// TestSpecOfTraits: SpecOf carries each trait a tool has into its spec,
// and gives the defaults for one that has none; Estimates likewise.
func TestSpecOfTraits(t *testing.T) {
	spec := toolgate.SpecOf(tracedTool{})
	if spec.Name != "traced" || spec.TimeoutMS != 1500 || spec.RequiresApproval != toolgate.ApprovalAlways ||
		spec.RateLimit == nil || spec.RateLimit.RequestsPerMinute != 2 || !spec.ReadOnly ||
		spec.RequiresSanitization == nil || *spec.RequiresSanitization {
		t.Errorf("spec %+v", spec)
	}
	if d, c := toolgate.Estimates(tracedTool{}, nil); d != time.Second || c != 0.5 {
		t.Errorf("estimates %v, %v", d, c)
	}

	var bare toolgate.Tool = struct{ toolgate.Tool }{plainTool{}} // hides every trait
	spec = toolgate.SpecOf(bare)
	if spec.Name != "plain" || spec.TimeoutMS != 0 || spec.RequiresApproval != toolgate.ApprovalNever ||
		spec.RateLimit != nil || spec.ReadOnly || spec.RequiresSanitization != nil {
		t.Errorf("spec of a tool without traits %+v", spec)
	}
	if d, c := toolgate.Estimates(bare, nil); d != 0 || c != 0 {
		t.Errorf("estimates of a tool without traits %v, %v", d, c)
	}
}

// TestCallerAndProgressContext: the caller's session and address and the
// progress reporter travel in a context; without them a tool reads
// nothing and its progress goes nowhere.
func TestCallerAndProgressContext(t *testing.T) {
	ctx := context.Background()
	if toolgate.CallerSession(ctx) != "" || toolgate.CallerAddress(ctx) != "" {
		t.Error("an empty context names a caller")
	}
	toolgate.ReportProgress(ctx, json.RawMessage(`1`)) // no reporter: nothing happens

	var got []string
	ctx = toolgate.WithCallerSession(ctx, "S1")
	ctx = toolgate.WithCallerAddress(ctx, "192.0.2.1")
	ctx = toolgate.WithProgressReporter(ctx, func(p json.RawMessage) { got = append(got, string(p)) })
	if toolgate.CallerSession(ctx) != "S1" || toolgate.CallerAddress(ctx) != "192.0.2.1" {
		t.Errorf("caller %q from %q", toolgate.CallerSession(ctx), toolgate.CallerAddress(ctx))
	}
	toolgate.ReportProgress(ctx, json.RawMessage(`{"step":1}`))
	if len(got) != 1 || got[0] != `{"step":1}` {
		t.Errorf("progress reported %v", got)
	}
}

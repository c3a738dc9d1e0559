package sandbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
)

// Tool is one sandboxed tool as its NAME.json describes it. Its calls run
// on the module the set lists under its name when the call starts.
type Tool struct {
	set    *ToolSet
	name   string
	config toolConfig
}

var (
	_ toolgate.Tool                 = (*Tool)(nil)
	_ toolgate.Timeouter            = (*Tool)(nil)
	_ toolgate.Approver             = (*Tool)(nil)
	_ toolgate.RateLimiter          = (*Tool)(nil)
	_ toolgate.ReadOnlyer           = (*Tool)(nil)
	_ toolgate.DurationEstimator    = (*Tool)(nil)
	_ toolgate.CostEstimator        = (*Tool)(nil)
	_ toolgate.SanitizationRequirer = (*Tool)(nil)
)

// Name implements toolgate.Tool.
func (t *Tool) Name() string { return t.name }

// Description implements toolgate.Tool.
func (t *Tool) Description() string { return t.config.spec.Description }

// Parameters implements toolgate.Tool.
func (t *Tool) Parameters() json.RawMessage { return t.config.spec.Parameters }

// Timeout implements toolgate.Timeouter: timeout_ms, zero for the
// gateway's default.
func (t *Tool) Timeout() time.Duration {
	return time.Duration(t.config.spec.TimeoutMS) * time.Millisecond
}

// RequiresApproval implements toolgate.Approver.
func (t *Tool) RequiresApproval() toolgate.Approval { return t.config.spec.RequiresApproval }

// RateLimit implements toolgate.RateLimiter.
func (t *Tool) RateLimit() *toolgate.RateLimit { return t.config.spec.RateLimit }

// ReadOnly implements toolgate.ReadOnlyer.
func (t *Tool) ReadOnly() bool { return t.config.spec.ReadOnly }

// EstimatedDuration implements toolgate.DurationEstimator.
func (t *Tool) EstimatedDuration(json.RawMessage) (time.Duration, bool) {
	ms := t.config.spec.EstimatedDurationMS
	return time.Duration(ms) * time.Millisecond, ms > 0
}

// EstimatedCost implements toolgate.CostEstimator.
func (t *Tool) EstimatedCost(json.RawMessage) (float64, bool) {
	c := t.config.spec.EstimatedCost
	return c, c > 0
}

// RequiresSanitization implements toolgate.SanitizationRequirer: what
// NAME.json says, else yes (a sandboxed module's output is not the
// gateway's own).
func (t *Tool) RequiresSanitization() bool {
	return toolgate.NeedsSanitization(t.config.spec, toolgate.ToolSource{Kind: toolgate.SourceSandbox})
}

// Execute implements toolgate.Tool: it runs the module once, waiting
// first (within ctx) for room among the calls running at once. When ctx
// ends (the call timed out or was cancelled, the gateway closes) the
// module is interrupted and ctx's error returned.
func (t *Tool) Execute(ctx context.Context, args json.RawMessage) (toolgate.Result, error) {
	m := t.set.acquire(t.name)
	if m == nil {
		return toolgate.Result{}, errRemoved(t.name)
	}
	defer t.set.calls.Done()
	defer m.release()
	release, err := t.set.room.wait(ctx, weightMB(int64(m.config.memoryBytes>>20)))
	if err != nil {
		return toolgate.Result{}, err
	}
	defer release()
	started := time.Now()
	out, err := m.call(ctx, args, t.set.opts.ScratchDir)
	return toolgate.Result{Output: out, Duration: time.Since(started)}, err
}

package sandbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
)

// Tool is one sandboxed tool as its NAME.json describes it. Its calls run
// on the module the set lists under its name when the call starts.
type Tool struct {
	set    *ToolSet
	name   string
	config toolConfig
}

var (
	_ agentloop.Tool                 = (*Tool)(nil)
	_ agentloop.Timeouter            = (*Tool)(nil)
	_ agentloop.Approver             = (*Tool)(nil)
	_ agentloop.RateLimiter          = (*Tool)(nil)
	_ agentloop.ReadOnlyer           = (*Tool)(nil)
	_ agentloop.DurationEstimator    = (*Tool)(nil)
	_ agentloop.CostEstimator        = (*Tool)(nil)
	_ agentloop.SanitizationRequirer = (*Tool)(nil)
)

// Name implements agentloop.Tool.
func (t *Tool) Name() string { return t.name }

// Description implements agentloop.Tool.
func (t *Tool) Description() string { return t.config.spec.Description }

// Parameters implements agentloop.Tool.
func (t *Tool) Parameters() json.RawMessage { return t.config.spec.Parameters }

// Timeout implements agentloop.Timeouter: timeout_ms, zero for the
// gateway's default.
func (t *Tool) Timeout() time.Duration {
	return time.Duration(t.config.spec.TimeoutMS) * time.Millisecond
}

// RequiresApproval implements agentloop.Approver.
func (t *Tool) RequiresApproval() toolgate.Approval { return t.config.spec.RequiresApproval }

// RateLimit implements agentloop.RateLimiter.
func (t *Tool) RateLimit() *toolgate.RateLimit { return t.config.spec.RateLimit }

// ReadOnly implements agentloop.ReadOnlyer.
func (t *Tool) ReadOnly() bool { return t.config.spec.ReadOnly }

// EstimatedDuration implements agentloop.DurationEstimator.
func (t *Tool) EstimatedDuration(json.RawMessage) (time.Duration, bool) {
	ms := t.config.spec.EstimatedDurationMS
	return time.Duration(ms) * time.Millisecond, ms > 0
}

// EstimatedCost implements agentloop.CostEstimator.
func (t *Tool) EstimatedCost(json.RawMessage) (float64, bool) {
	c := t.config.spec.EstimatedCost
	return c, c > 0
}

// RequiresSanitization implements agentloop.SanitizationRequirer: what
// NAME.json says, else yes (a sandboxed module's output is not the
// gateway's own).
func (t *Tool) RequiresSanitization() bool {
	return toolgate.NeedsSanitization(t.config.spec, toolgate.ToolSource{Kind: toolgate.SourceSandbox})
}

// Execute implements agentloop.Tool: it runs the module once, waiting
// first (within ctx) for room among the calls running at once. When ctx
// ends (the call timed out or was cancelled, the gateway closes) the
// module is interrupted and ctx's error returned.
func (t *Tool) Execute(ctx context.Context, args json.RawMessage) (agentloop.Result, error) {
	m := t.set.acquire(t.name)
	if m == nil {
		return agentloop.Result{}, errRemoved(t.name)
	}
	defer m.release()
	release, err := t.set.room.wait(ctx, weightMB(int64(m.config.memoryBytes>>20)))
	if err != nil {
		return agentloop.Result{}, err
	}
	defer release()
	started := time.Now()
	out, err := m.call(ctx, args, t.set.opts.ScratchDir)
	return agentloop.Result{Output: out, Duration: time.Since(started)}, err
}

package toolgate

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is one tool the gateway can call without a client in between, or
// that the agent can call: built-in tools, the tools of an imported MCP
// server, sandboxed tools and a client's remote tools implement it alike,
// so the agent loop and the engine never tell them apart. The packages
// that provide tools (agentloop, mcpimport, sandbox) and those that run
// them (the engine, the agent host) share it here, so that none of them
// imports another for it.
type Tool interface {
	// Name is the tool's unique name, as the model calls it.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema of the arguments (top-level type object).
	Parameters() json.RawMessage
	// Execute runs the tool with JSON arguments. A failure the model should
	// hear about is a *Error (its code, message and details).
	Execute(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what one execution of a tool produced.
type Result struct {
	Output   json.RawMessage // any JSON value
	Duration time.Duration   // how long the execution took
	// Call is the stored call record when the tool ran through the gateway.
	Call *Call
}

// The optional traits a tool may implement. A tool without one gets the
// default: the gateway's default timeout, no approval, no rate limit, not
// read-only, no estimates.
type (
	// Timeouter sets how long one execution may take.
	Timeouter interface{ Timeout() time.Duration }
	// Approver says when a call must wait for a person's approval.
	Approver interface{ RequiresApproval() Approval }
	// RateLimiter caps how often the tool may be called per session.
	RateLimiter interface{ RateLimit() *RateLimit }
	// ReadOnlyer reports that the tool changes nothing.
	ReadOnlyer interface{ ReadOnly() bool }
	// DurationEstimator estimates how long a call with these arguments takes.
	DurationEstimator interface {
		EstimatedDuration(args json.RawMessage) (time.Duration, bool)
	}
	// SanitizationRequirer says whether the tool's output passes the
	// safety step (redaction, injection marking) before a model sees it;
	// a tool without it takes NeedsSanitization's default.
	SanitizationRequirer interface{ RequiresSanitization() bool }
	// Rerunnable says whether a call with these arguments may run again
	// when the process (or node) that ran it stopped before its outcome
	// was stored. A tool without it may: a built-in tool is expected to be
	// idempotent. One that is not for some arguments (http_request's POST)
	// says so, and such a call ends failed with INTERRUPTED instead.
	Rerunnable interface {
		SafeToRerun(args json.RawMessage) bool
	}
	// Presenter gives what the tool shows besides its description (its
	// title, annotations, output schema and icons).
	Presenter interface{ Presentation() Presentation }
	// CostEstimator estimates what a call with these arguments costs, in the
	// embedder's unit (for budgets).
	CostEstimator interface {
		EstimatedCost(args json.RawMessage) (float64, bool)
	}
)

// SpecOf describes a tool as the wire protocol does, traits included.
func SpecOf(t Tool) ToolSpec {
	spec := ToolSpec{
		Name:             t.Name(),
		Description:      t.Description(),
		Parameters:       t.Parameters(),
		RequiresApproval: ApprovalNever,
	}
	if x, ok := t.(Timeouter); ok && x.Timeout() > 0 {
		spec.TimeoutMS = x.Timeout().Milliseconds()
	}
	if x, ok := t.(Approver); ok && x.RequiresApproval().Valid() {
		spec.RequiresApproval = x.RequiresApproval()
	}
	if x, ok := t.(RateLimiter); ok {
		spec.RateLimit = x.RateLimit()
	}
	if x, ok := t.(ReadOnlyer); ok {
		spec.ReadOnly = x.ReadOnly()
	}
	if x, ok := t.(Presenter); ok {
		spec.SetPresentation(x.Presentation())
	}
	if x, ok := t.(SanitizationRequirer); ok {
		v := x.RequiresSanitization()
		spec.RequiresSanitization = &v
	}
	return spec
}

// Estimates returns a tool's estimated duration and cost for the
// arguments, zero when it gives none.
func Estimates(t Tool, args json.RawMessage) (time.Duration, float64) {
	var d time.Duration
	var c float64
	if x, ok := t.(DurationEstimator); ok {
		if v, ok := x.EstimatedDuration(args); ok {
			d = v
		}
	}
	if x, ok := t.(CostEstimator); ok {
		if v, ok := x.EstimatedCost(args); ok {
			c = v
		}
	}
	return d, c
}

package agentloop

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
)

// Dispatcher sends calls through the gateway's engine, which stores each
// call before anyone is told of it, delivers it to the client that owns the
// tool (or runs a built-in tool), enforces its deadline and redelivers it
// after a reconnect or a restart. The server package implements it.
type Dispatcher interface {
	// Dispatch checks and stores a call and returns its record. A call with
	// an IdempotencyKey already used returns the call made with it.
	Dispatch(ctx context.Context, req DispatchRequest) (*toolgate.Call, error)
	// Wait returns the call's record once it has ended, calling progress
	// with each progress report the client makes meanwhile.
	Wait(ctx context.Context, callID string, progress func(json.RawMessage)) (*toolgate.Call, error)
}

// DispatchRequest is one call to send through the gateway.
type DispatchRequest struct {
	SessionID      string // empty for a built-in tool
	Tool           string
	Args           json.RawMessage
	RunID          string
	IdempotencyKey string
}

// Invocation is what the loop tells a gateway tool about the call it is
// making, carried in the context given to Execute.
type Invocation struct {
	RunID          string
	IdempotencyKey string
	// Dispatched, when set, is told of the stored call before the wait for
	// its end begins (its status may be awaiting_approval).
	Dispatched func(*toolgate.Call)
	// Progress, when set, receives the client's progress reports.
	Progress func(callID string, progress json.RawMessage)
}

type invocationKey struct{}

// WithInvocation returns ctx carrying inv for a tool's Execute.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation carried by ctx, zero when none.
func InvocationFrom(ctx context.Context) Invocation {
	inv, _ := ctx.Value(invocationKey{}).(Invocation)
	return inv
}

// GatewayTool is a tool executed through the gateway's engine: a remote
// tool of one session, or a built-in tool whose calls are stored like any
// other so that the history has them. Its Execute dispatches the call and
// waits for its end, so it gets persistence, deadlines, approval, rate
// limits and redelivery from the engine.
type GatewayTool struct {
	spec       toolgate.ToolSpec
	source     toolgate.ToolSource
	dispatcher Dispatcher
	estimates  toolgate.Tool // the built-in tool, for its estimates; nil for a remote one
}

// NewRemoteTool returns the tool spec of session sessionID as a Tool.
func NewRemoteTool(spec toolgate.ToolSpec, sessionID string, d Dispatcher) *GatewayTool {
	if len(spec.Parameters) == 0 {
		spec.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	return &GatewayTool{spec: spec, source: toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: sessionID}, dispatcher: d}
}

// Name implements toolgate.Tool.
func (t *GatewayTool) Name() string { return t.spec.Name }

// Description implements toolgate.Tool.
func (t *GatewayTool) Description() string { return t.spec.Description }

// Parameters implements toolgate.Tool.
func (t *GatewayTool) Parameters() json.RawMessage { return t.spec.Parameters }

// Timeout implements toolgate.Timeouter.
func (t *GatewayTool) Timeout() time.Duration {
	return time.Duration(t.spec.TimeoutMS) * time.Millisecond
}

// RequiresApproval implements toolgate.Approver.
func (t *GatewayTool) RequiresApproval() toolgate.Approval { return t.spec.RequiresApproval }

// RateLimit implements toolgate.RateLimiter.
func (t *GatewayTool) RateLimit() *toolgate.RateLimit { return t.spec.RateLimit }

// ReadOnly implements toolgate.ReadOnlyer.
func (t *GatewayTool) ReadOnly() bool { return t.spec.ReadOnly }

// RequiresSanitization implements toolgate.SanitizationRequirer: the spec's
// requires_sanitization, else the default for where the tool runs.
func (t *GatewayTool) RequiresSanitization() bool {
	return toolgate.NeedsSanitization(t.spec, t.source)
}

// EstimatedDuration implements toolgate.DurationEstimator for built-in tools.
func (t *GatewayTool) EstimatedDuration(args json.RawMessage) (time.Duration, bool) {
	if x, ok := t.estimates.(toolgate.DurationEstimator); ok {
		return x.EstimatedDuration(args)
	}
	return 0, false
}

// EstimatedCost implements toolgate.CostEstimator: a built-in tool's estimate for
// the arguments, else the spec's estimated_cost (a remote tool's).
func (t *GatewayTool) EstimatedCost(args json.RawMessage) (float64, bool) {
	if x, ok := t.estimates.(toolgate.CostEstimator); ok {
		return x.EstimatedCost(args)
	}
	return t.spec.EstimatedCost, t.spec.EstimatedCost > 0
}

// Source says where the tool runs.
func (t *GatewayTool) Source() toolgate.ToolSource { return t.source }

// Execute implements toolgate.Tool: it dispatches the call (with the run id and
// idempotency key of the context's Invocation) and waits for its end. A
// call that did not complete is returned as a *toolgate.Error with the
// call's error code, message and details, beside the result holding the
// call record.
func (t *GatewayTool) Execute(ctx context.Context, args json.RawMessage) (toolgate.Result, error) {
	inv := InvocationFrom(ctx)
	call, err := t.dispatcher.Dispatch(ctx, DispatchRequest{
		SessionID: t.source.SessionID, Tool: t.spec.Name, Args: args,
		RunID: inv.RunID, IdempotencyKey: inv.IdempotencyKey,
	})
	if err != nil {
		return toolgate.Result{}, err
	}
	if inv.Dispatched != nil {
		inv.Dispatched(call)
	}
	var progress func(json.RawMessage)
	if inv.Progress != nil {
		progress = func(p json.RawMessage) { inv.Progress(call.ID, p) }
	}
	final, err := t.dispatcher.Wait(ctx, call.ID, progress)
	if err != nil {
		return toolgate.Result{Call: call}, err
	}
	return CallResult(final)
}

// CallResult turns an ended call into a Result, or into the
// *toolgate.Error its failure carries.
func CallResult(c *toolgate.Call) (toolgate.Result, error) {
	res := toolgate.Result{Output: c.Output, Call: c}
	if c.DurationMS != nil {
		res.Duration = time.Duration(*c.DurationMS) * time.Millisecond
	}
	if c.Status == toolgate.StatusCompleted {
		if len(res.Output) == 0 {
			res.Output = json.RawMessage("null")
		}
		return res, nil
	}
	e := &toolgate.Error{Code: toolgate.EInternal, Message: "the call ended " + string(c.Status)}
	if c.Error != nil {
		e.Code, e.Message = c.Error.Code, c.Error.Message
		if len(c.Error.Details) > 0 {
			var details map[string]any
			if json.Unmarshal(c.Error.Details, &details) == nil {
				e.Details = details
			}
		}
	}
	return res, e
}

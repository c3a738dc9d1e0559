package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/toolgate/toolgate"
)

// FuncTool is a built-in tool made of a Go function whose arguments are a
// struct; the parameters schema is reflected from that struct (json and
// jsonschema tags), so the schema and the code cannot disagree.
type FuncTool[Args any] struct {
	name, description string
	schema            json.RawMessage
	fn                func(ctx context.Context, args Args) (any, error)

	// Traits; zero values are the defaults.
	TimeoutValue  time.Duration
	Approval      toolgate.Approval
	Limit         *toolgate.RateLimit
	IsReadOnly    bool
	TypicalLength time.Duration
	// ReachesOutside marks a built-in tool whose output comes from outside
	// the gateway (http_request): it passes the safety step before a model
	// sees it. Other built-in tools are trusted and skip it.
	ReachesOutside bool
	// Rerun, when set, says whether a call with these arguments may run
	// again after the process running it stopped (toolgate.Rerunnable); unset, it
	// may.
	Rerun func(args json.RawMessage) bool
}

// NewFuncTool makes a built-in tool of fn.
func NewFuncTool[Args any](name, description string, fn func(ctx context.Context, args Args) (any, error)) *FuncTool[Args] {
	return &FuncTool[Args]{name: name, description: description, schema: ReflectSchema[Args](), fn: fn}
}

// ReflectSchema returns the JSON Schema of the struct Args, inlined (no
// $ref or $defs) and without $schema/$id, the way models expect tool
// parameters.
func ReflectSchema[Args any]() json.RawMessage {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	var zero Args
	s := r.Reflect(&zero)
	s.Version, s.ID = "", ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("agentloop: reflect schema: %v", err)) // a struct always marshals
	}
	return b
}

// Name implements toolgate.Tool.
func (t *FuncTool[Args]) Name() string { return t.name }

// Description implements toolgate.Tool.
func (t *FuncTool[Args]) Description() string { return t.description }

// Parameters implements toolgate.Tool.
func (t *FuncTool[Args]) Parameters() json.RawMessage { return t.schema }

// Timeout implements toolgate.Timeouter.
func (t *FuncTool[Args]) Timeout() time.Duration { return t.TimeoutValue }

// RequiresApproval implements toolgate.Approver.
func (t *FuncTool[Args]) RequiresApproval() toolgate.Approval {
	if t.Approval == "" {
		return toolgate.ApprovalNever
	}
	return t.Approval
}

// RateLimit implements toolgate.RateLimiter.
func (t *FuncTool[Args]) RateLimit() *toolgate.RateLimit { return t.Limit }

// ReadOnly implements toolgate.ReadOnlyer.
func (t *FuncTool[Args]) ReadOnly() bool { return t.IsReadOnly }

// RequiresSanitization implements toolgate.SanitizationRequirer.
func (t *FuncTool[Args]) RequiresSanitization() bool { return t.ReachesOutside }

// SafeToRerun implements toolgate.Rerunnable.
func (t *FuncTool[Args]) SafeToRerun(args json.RawMessage) bool {
	return t.Rerun == nil || t.Rerun(args)
}

// EstimatedDuration implements toolgate.DurationEstimator.
func (t *FuncTool[Args]) EstimatedDuration(json.RawMessage) (time.Duration, bool) {
	return t.TypicalLength, t.TypicalLength > 0
}

// Execute implements toolgate.Tool: it decodes the arguments into Args (unknown
// fields refused) and runs the function.
func (t *FuncTool[Args]) Execute(ctx context.Context, raw json.RawMessage) (toolgate.Result, error) {
	start := time.Now()
	var args Args
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return toolgate.Result{}, toolgate.Errorf(toolgate.EInvalidArgs, "arguments of %s: %v", t.name, err)
		}
	}
	out, err := t.fn(ctx, args)
	if err != nil {
		return toolgate.Result{Duration: time.Since(start)}, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return toolgate.Result{Duration: time.Since(start)}, fmt.Errorf("encode the output of %s: %w", t.name, err)
	}
	return toolgate.Result{Output: b, Duration: time.Since(start)}, nil
}

// CurrentTimeArgs are the arguments of the current_time tool.
type CurrentTimeArgs struct {
	TimeZone string `json:"time_zone,omitempty" jsonschema:"description=IANA time zone such as Europe/Paris or America/New_York; UTC when omitted"`
}

// CurrentTime is the time in a zone, as current_time returns it.
type CurrentTime struct {
	Time      string `json:"time"`
	TimeZone  string `json:"time_zone"`
	UTCOffset string `json:"utc_offset"`
	Weekday   string `json:"weekday"`
	UnixMS    int64  `json:"unix_ms"`
}

// NewCurrentTimeTool returns current_time: the current date and time in a
// time zone, which models cannot know by themselves. now is the clock.
func NewCurrentTimeTool(now func() time.Time) *FuncTool[CurrentTimeArgs] {
	t := NewFuncTool("current_time", "Get the current date and time in a time zone (IANA name, default UTC).",
		func(_ context.Context, a CurrentTimeArgs) (any, error) {
			zone := a.TimeZone
			if zone == "" {
				zone = "UTC"
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return nil, toolgate.Errorf(toolgate.EInvalidArgs, "unknown time zone %q; use an IANA name such as Europe/Paris", zone)
			}
			t := now().In(loc)
			return CurrentTime{
				Time: t.Format(time.RFC3339), TimeZone: zone, UTCOffset: t.Format("-07:00"),
				Weekday: t.Weekday().String(), UnixMS: t.UnixMilli(),
			}, nil
		})
	t.IsReadOnly = true
	return t
}

// CallHistory reads the gateway's call history; the engine implements it.
type CallHistory interface {
	ListCalls(ctx context.Context, q toolgate.CallQuery) (*toolgate.CallList, error)
}

// CallHistoryArgs are the arguments of the call_history tool.
type CallHistoryArgs struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"description=only calls of this session"`
	Tool      string `json:"tool,omitempty" jsonschema:"description=only calls of this tool"`
	Status    string `json:"status,omitempty" jsonschema:"enum=awaiting_approval,enum=pending,enum=delivered,enum=completed,enum=failed,enum=timed_out,enum=cancelled,enum=denied,description=only calls in this status"`
	Limit     int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50,description=how many calls, newest first (default 10)"`
}

// CallSummary is one call as call_history returns it.
type CallSummary struct {
	ID         string `json:"id"`
	Tool       string `json:"tool"`
	SessionID  string `json:"session_id,omitempty"`
	Status     string `json:"status"`
	CreatedAt  string `json:"created_at"`
	DurationMS *int64 `json:"duration_ms,omitempty"`
	ErrorCode  string `json:"error_code,omitempty"`
	// Cost is what the call cost as its answer reported it, else the
	// tool's estimate (then CostEstimated is true); absent when neither
	// was given.
	Cost          *float64 `json:"cost,omitempty"`
	CostEstimated bool     `json:"cost_estimated,omitempty"`
}

// NewCallHistoryTool returns call_history: the gateway's recent calls,
// newest first, so an agent can see what it (or others) already did and
// what failed. In a run started by a session's token it shows only that
// session's calls.
func NewCallHistoryTool(h CallHistory) *FuncTool[CallHistoryArgs] {
	t := NewFuncTool("call_history", "List this gateway's recent tool calls, newest first, with their status, duration, cost (as reported, else estimated: cost_estimated) and error code.",
		func(ctx context.Context, a CallHistoryArgs) (any, error) {
			if a.Limit == 0 {
				a.Limit = 10
			}
			if a.Limit < 1 || a.Limit > 50 {
				return nil, toolgate.Errorf(toolgate.EInvalidArgs, "limit must be between 1 and 50")
			}
			if caller := toolgate.CallerSession(ctx); caller != "" {
				// A run a session started sees that session's calls only.
				if a.SessionID != "" && a.SessionID != caller {
					return nil, toolgate.Errorf(toolgate.EPermissionDenied, "this run may read only the calls of its own session %s", caller)
				}
				a.SessionID = caller
			}
			list, err := h.ListCalls(ctx, toolgate.CallQuery{
				SessionID: a.SessionID, Tool: a.Tool, Status: toolgate.CallStatus(a.Status), Limit: a.Limit,
			})
			if err != nil {
				return nil, err
			}
			out := make([]CallSummary, 0, len(list.Calls))
			for _, c := range list.Calls {
				s := CallSummary{ID: c.ID, Tool: c.Tool, SessionID: c.SessionID, Status: string(c.Status),
					CreatedAt: c.CreatedAt.String(), DurationMS: c.DurationMS}
				if c.Error != nil {
					s.ErrorCode = c.Error.Code
				}
				switch {
				case c.Cost != nil:
					s.Cost = c.Cost
				case c.EstimatedCost != nil:
					s.Cost, s.CostEstimated = c.EstimatedCost, true
				}
				out = append(out, s)
			}
			return map[string]any{"calls": out}, nil
		})
	t.IsReadOnly = true
	return t
}

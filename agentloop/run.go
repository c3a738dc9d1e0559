package agentloop

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate"
)

// RunStore keeps runs step by step; the server implements it over SQLite.
type RunStore interface {
	// CreateRun stores a new run with its input messages.
	CreateRun(ctx context.Context, run *toolgate.Run) error
	// AppendMessages stores messages the run produced and its step count,
	// in one transaction.
	AppendMessages(ctx context.Context, runID string, steps int, msgs []toolgate.ChatMessage) error
	// FinishRun records the run's end.
	FinishRun(ctx context.Context, runID string, status toolgate.RunStatus, output string, runErr *toolgate.CallError) error
	// LoadRun reads a run with its messages; NOT_FOUND when there is none.
	LoadRun(ctx context.Context, runID string) (*toolgate.Run, error)
	// RunCost returns what the run has cost so far: the sum over its calls
	// of the cost each answer reported, else the call's estimate (a denied
	// call costs nothing), leaving out the calls whose idempotency key
	// starts with exceptKeyPrefix when it is set.
	RunCost(ctx context.Context, runID, exceptKeyPrefix string) (float64, error)
}

// Run event types, streamed to whoever started the run.
const (
	EventRunStarted       = "run_started"
	EventModelMessage     = "model_message"
	EventToolCallStarted  = "tool_call_started"
	EventToolCallProgress = "tool_call_progress"
	EventToolCallFinished = "tool_call_finished"
	EventApprovalNeeded   = "approval_needed"
	EventRunFinished      = "run_finished"
	EventRunFailed        = "run_failed"
)

// EventToolOutputFlagged comes before a tool_call_finished whose output
// (or error) holds text that tries to pass as instructions: the model is
// shown it marked as tool data (safety.go).
const EventToolOutputFlagged = "tool_output_flagged"

// Event is one run event as the loop emits it; the server encodes each
// once into a toolgate.RunEvent for whoever streams the run. Fields not
// relevant to a type are left out.
type Event struct {
	Type       string                `json:"type"`
	RunID      string                `json:"run_id"`
	Step       int                   `json:"step,omitempty"`
	Message    *toolgate.ChatMessage `json:"message,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
	CallID     string                `json:"call_id,omitempty"`
	Tool       string                `json:"tool,omitempty"`
	Args       json.RawMessage       `json:"args,omitempty"`
	Status     string                `json:"status,omitempty"`
	Output     json.RawMessage       `json:"output,omitempty"`
	Error      *toolgate.CallError   `json:"error,omitempty"`
	Progress   json.RawMessage       `json:"progress,omitempty"`
	DurationMS *int64                `json:"duration_ms,omitempty"`
	// Estimates the tool gives for this call, on tool_call_started.
	EstimatedDurationMS int64   `json:"estimated_duration_ms,omitempty"`
	EstimatedCost       float64 `json:"estimated_cost,omitempty"`
	// Findings are the injection attempts found in a tool's output, on
	// tool_output_flagged.
	Findings []OutputFinding `json:"findings,omitempty"`
	// Sanitized says what the safety step changed in the output, on
	// tool_call_finished; absent when it changed nothing.
	Sanitized *Sanitized `json:"sanitized,omitempty"`
	// Run is the run record on run_started, run_finished and run_failed
	// (without its messages and calls).
	Run *toolgate.Run `json:"run,omitempty"`
}

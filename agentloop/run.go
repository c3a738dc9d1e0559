package agentloop

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate"
)

// RunStatus is where a run is in its life.
type RunStatus string

// The statuses of a run.
const (
	RunRunning  RunStatus = "running"
	RunFinished RunStatus = "finished"
	RunFailed   RunStatus = "failed"
)

// Codes a failed run may carry besides the protocol's.
const (
	EMaxSteps   = "MAX_STEPS"   // the model had not answered after max_steps turns
	EModelError = "MODEL_ERROR" // the model endpoint failed or answered nonsense
)

// Run is one conversation driven by the loop, as stored and as
// GET /v1/runs/{id} shows it.
type Run struct {
	ID               string              `json:"id"`
	SessionID        string              `json:"session_id,omitempty"`
	StartedBySession string              `json:"started_by_session,omitempty"` // set when a session token started it
	Model            string              `json:"model"`
	Status           RunStatus           `json:"status"`
	MaxSteps         int                 `json:"max_steps"`
	Steps            int                 `json:"steps"` // model turns taken
	Output           string              `json:"output,omitempty"`
	Error            *toolgate.CallError `json:"error,omitempty"`
	CreatedAt        toolgate.Time       `json:"created_at"`
	UpdatedAt        toolgate.Time       `json:"updated_at"`
	FinishedAt       *toolgate.Time      `json:"finished_at"`
	InputMessages    int                 `json:"input_messages"` // how many of Messages were the input
	Messages         []Message           `json:"messages"`
	Calls            []*toolgate.Call    `json:"calls,omitempty"`
}

// RunStore keeps runs step by step; the server implements it over SQLite.
type RunStore interface {
	// CreateRun stores a new run with its input messages.
	CreateRun(ctx context.Context, run *Run) error
	// AppendMessages stores messages the run produced and its step count,
	// in one transaction.
	AppendMessages(ctx context.Context, runID string, steps int, msgs []Message) error
	// FinishRun records the run's end.
	FinishRun(ctx context.Context, runID string, status RunStatus, output string, runErr *toolgate.CallError) error
	// LoadRun reads a run with its messages; NOT_FOUND when there is none.
	LoadRun(ctx context.Context, runID string) (*Run, error)
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

// Event is one run event. Fields not relevant to a type are left out.
type Event struct {
	Type       string              `json:"type"`
	RunID      string              `json:"run_id"`
	Step       int                 `json:"step,omitempty"`
	Message    *Message            `json:"message,omitempty"`
	ToolCallID string              `json:"tool_call_id,omitempty"`
	CallID     string              `json:"call_id,omitempty"`
	Tool       string              `json:"tool,omitempty"`
	Args       json.RawMessage     `json:"args,omitempty"`
	Status     string              `json:"status,omitempty"`
	Output     json.RawMessage     `json:"output,omitempty"`
	Error      *toolgate.CallError `json:"error,omitempty"`
	Progress   json.RawMessage     `json:"progress,omitempty"`
	DurationMS *int64              `json:"duration_ms,omitempty"`
	// Estimates the tool gives for this call, on tool_call_started.
	EstimatedDurationMS int64   `json:"estimated_duration_ms,omitempty"`
	EstimatedCost       float64 `json:"estimated_cost,omitempty"`
	// Run is the run record on run_started, run_finished and run_failed
	// (without its messages and calls).
	Run *Run `json:"run,omitempty"`
}

package toolgate

import (
	"context"
	"encoding/json"
)

// RunRequest is the body of POST /v1/runs and POST /v1/sessions/{sid}/runs:
// input text, or messages in the chat-completions format.
type RunRequest struct {
	SessionID string          `json:"session_id"`
	Input     string          `json:"input"`
	Messages  json.RawMessage `json:"messages"`
	MaxSteps  int             `json:"max_steps"`
	// MaxCost, when above zero, is the run's budget: it stops before a
	// call whose estimate would take the run's cost past it, and after a
	// step whose reported costs did.
	MaxCost float64 `json:"max_cost"`
	// Wait: false answers 202 with the run as soon as it is stored.
	Wait *bool `json:"wait"`
}

// RunStatus is where a run is in its life.
type RunStatus string

// The statuses of a run.
const (
	RunRunning  RunStatus = "running"
	RunFinished RunStatus = "finished"
	RunFailed   RunStatus = "failed"
)

// Run is one conversation the agent drives, as stored and as
// GET /v1/runs/{id} shows it.
type Run struct {
	ID               string        `json:"id"`
	SessionID        string        `json:"session_id,omitempty"`
	StartedBySession string        `json:"started_by_session,omitempty"` // set when a session token started it
	Model            string        `json:"model"`
	Status           RunStatus     `json:"status"`
	MaxSteps         int           `json:"max_steps"`
	Steps            int           `json:"steps"` // model turns taken
	MaxCost          float64       `json:"max_cost,omitempty"`
	Cost             float64       `json:"cost,omitempty"` // the sum of its calls' costs
	Output           string        `json:"output,omitempty"`
	Error            *CallError    `json:"error,omitempty"`
	CreatedAt        Time          `json:"created_at"`
	UpdatedAt        Time          `json:"updated_at"`
	FinishedAt       *Time         `json:"finished_at"`
	InputMessages    int           `json:"input_messages"` // how many of Messages were the input
	Messages         []ChatMessage `json:"messages"`
	Calls            []*Call       `json:"calls,omitempty"`
}

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ChatMessage is one message of a conversation in the chat-completions
// format: what runs take as input, store step by step and send to the
// model.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// ChatToolCall is a tool call the model asks for in an assistant message
// (not yet a Call: the agent makes one from it).
type ChatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"` // "function"
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall names the tool and carries its arguments as JSON text,
// as the model wrote them (possibly invalid).
type ChatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// RunEvent is one event of a run (run_started, model_message, ...,
// run_finished), its JSON encoded once for every reader.
type RunEvent struct {
	Type string
	Data json.RawMessage
}

// RunFeed is a started run's events, from its start.
type RunFeed interface {
	// Next returns the events after the first from, waiting until there
	// are some, the run has ended (ended true once all were returned), or
	// ctx ends.
	Next(ctx context.Context, from int) (events []RunEvent, ended bool, err error)
}

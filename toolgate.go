// Package toolgate holds the domain and wire types of the toolgate gateway:
// tool specifications, calls and their statuses, the events a client
// receives, and the error type with its codes. It imports only the standard
// library; the store, the engine, the HTTP handlers and the client SDKs all
// speak in these types.
package toolgate

import (
	"encoding/json"
	"regexp"
	"time"
)

// ToolNamePattern is the shape every tool name must have.
var ToolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// MaxDescriptionLength is the longest tool description accepted, in characters.
const MaxDescriptionLength = 4096

// Approval says when a call to a tool must wait for a person's approval.
type Approval string

// The approval requirements a tool may declare.
const (
	ApprovalNever              Approval = "never"
	ApprovalUnlessAutoApproved Approval = "unless_auto_approved"
	ApprovalAlways             Approval = "always"
)

// Valid reports whether a is one of the known requirements.
func (a Approval) Valid() bool {
	switch a {
	case ApprovalNever, ApprovalUnlessAutoApproved, ApprovalAlways:
		return true
	}
	return false
}

// RateLimit caps how often a tool may be called per session.
// A zero field means no limit for that window.
type RateLimit struct {
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	RequestsPerHour   int `json:"requests_per_hour,omitempty"`
}

// ToolSpec is a tool as a client registers it.
type ToolSpec struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	Parameters       json.RawMessage `json:"parameters,omitempty"`
	TimeoutMS        int64           `json:"timeout_ms,omitempty"`
	RequiresApproval Approval        `json:"requires_approval,omitempty"`
	RateLimit        *RateLimit      `json:"rate_limit,omitempty"`
	ReadOnly         bool            `json:"read_only,omitempty"`
	// EstimatedCost and EstimatedDurationMS are what the tool expects a
	// call to cost (in the operator's unit, the one a run's max_cost is in)
	// and to take; zero when it gives no estimate.
	EstimatedCost       float64 `json:"estimated_cost,omitempty"`
	EstimatedDurationMS int64   `json:"estimated_duration_ms,omitempty"`
	// RequiresSanitization says whether the tool's output passes the
	// safety step before a model sees it; unset takes the default of
	// NeedsSanitization.
	RequiresSanitization *bool `json:"requires_sanitization,omitempty"`
	// Title, Annotations, OutputSchema and Icons are what MCP hosts see
	// of a tool besides its name and description (Presentation says what
	// each is).
	Title        string           `json:"title,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	OutputSchema json.RawMessage  `json:"output_schema,omitempty"`
	Icons        json.RawMessage  `json:"icons,omitempty"`
}

// Presentation returns the spec's title, annotations, output schema and
// icons.
func (s ToolSpec) Presentation() Presentation {
	return Presentation{Title: s.Title, Annotations: s.Annotations, OutputSchema: s.OutputSchema, Icons: s.Icons}
}

// SetPresentation sets the spec's title, annotations, output schema and
// icons.
func (s *ToolSpec) SetPresentation(p Presentation) {
	s.Title, s.Annotations, s.OutputSchema, s.Icons = p.Title, p.Annotations, p.OutputSchema, p.Icons
}

// Presentation is what a tool shows besides its description: Title is a
// name for people to read (a host's UI shows it); Annotations are hints
// about the tool's behaviour; OutputSchema is the JSON Schema (type
// "object") of what a completed call outputs, which every output is
// checked against; Icons is the MCP list of icons ({src, mimeType, sizes,
// theme}). MCP hosts see them as the tool's title, annotations,
// outputSchema and icons; CheckToolPresentation bounds them.
type Presentation struct {
	Title        string           `json:"title,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	OutputSchema json.RawMessage  `json:"output_schema,omitempty"`
	Icons        json.RawMessage  `json:"icons,omitempty"`
}

// ToolAnnotations are the hints MCP gives a tool besides read-only (which
// ToolSpec.ReadOnly is): unset is MCP's default (destructive, not
// idempotent, open world).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	DestructiveHint *bool  `json:"destructive_hint,omitempty"`
	IdempotentHint  *bool  `json:"idempotent_hint,omitempty"`
	OpenWorldHint   *bool  `json:"open_world_hint,omitempty"`
}

// NeedsSanitization reports whether the output of a tool with this spec,
// from that source, passes the safety step (redaction, injection marking)
// before a model sees it: what the spec says, else yes for every tool that
// reaches outside the gateway (remote, sandboxed, MCP) and no for a
// built-in one.
func NeedsSanitization(spec ToolSpec, source ToolSource) bool {
	if spec.RequiresSanitization != nil {
		return *spec.RequiresSanitization
	}
	return source.Kind != SourceBuiltin
}

// ToolSource says where a tool runs.
type ToolSource struct {
	Kind      string `json:"kind"` // "builtin", "remote", "mcp" or "sandbox"
	SessionID string `json:"session_id,omitempty"`
	// Server is the name of the imported MCP server (--mcp-server NAME=…)
	// a tool of kind "mcp" comes from.
	Server string `json:"server,omitempty"`
}

// Tool source kinds.
const (
	SourceBuiltin = "builtin" // runs inside the gateway
	SourceRemote  = "remote"  // lives in a client's session
	SourceMCP     = "mcp"     // a tool of an MCP server the gateway imports
	SourceSandbox = "sandbox" // a WebAssembly module the gateway runs (--sandbox-dir)
)

// ToolInfo is a tool as the caller API lists it: its spec, where it runs and
// whether it can be called now.
type ToolInfo struct {
	ToolSpec
	Source ToolSource `json:"source"`
	Online bool       `json:"online"`
	// Presence is PresenceConnected, PresenceAway (a remote tool whose
	// client is away, within its grace: Online, calls wait) or
	// PresenceOffline.
	Presence     string `json:"presence,omitempty"`
	RegisteredAt *Time  `json:"registered_at,omitempty"`
	// DescriptionWithheld, in GET /api/tools and MCP listings, says the
	// description or parameter descriptions held text aimed at a model
	// and are shown withheld (outputsafety.ScreenTool).
	DescriptionWithheld bool `json:"description_withheld,omitempty"`
}

// ClientInfo describes the program behind a session.
type ClientInfo struct {
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
}

// Platforms a client may declare.
var Platforms = []string{"web", "android", "ios", "desktop", "other"}

// Session is a client's registration with the gateway.
type Session struct {
	ID          string          `json:"session_id"`
	Client      ClientInfo      `json:"client"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	AutoApprove bool            `json:"auto_approve"`
	CreatedAt   Time            `json:"created_at"`
	LastSeenAt  Time            `json:"last_seen_at"`
	ClosedAt    *Time           `json:"closed_at,omitempty"`
	CloseReason string          `json:"close_reason,omitempty"`
}

// CallStatus is where a call is in its life.
type CallStatus string

// The statuses of a call. The last five are final.
const (
	StatusAwaitingApproval CallStatus = "awaiting_approval"
	StatusPending          CallStatus = "pending"
	StatusDelivered        CallStatus = "delivered"
	StatusCompleted        CallStatus = "completed"
	StatusFailed           CallStatus = "failed"
	StatusTimedOut         CallStatus = "timed_out"
	StatusCancelled        CallStatus = "cancelled"
	StatusDenied           CallStatus = "denied"
)

// Final reports whether a call in status s has ended.
func (s CallStatus) Final() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusTimedOut, StatusCancelled, StatusDenied:
		return true
	}
	return false
}

// Valid reports whether s is a known status.
func (s CallStatus) Valid() bool {
	switch s {
	case StatusAwaitingApproval, StatusPending, StatusDelivered:
		return true
	}
	return s.Final()
}

// CallError is why a call did not complete: a tool error reported by the
// client, or the gateway's reason (TIMEOUT, CANCELLED, DENIED, ...).
type CallError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

// Call is one invocation of a tool, as the caller API shows it.
type Call struct {
	ID          string          `json:"id"`
	SessionID   string          `json:"session_id,omitempty"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Status      CallStatus      `json:"status"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *CallError      `json:"error,omitempty"`
	Progress    json.RawMessage `json:"progress,omitempty"`
	CreatedAt   Time            `json:"created_at"`
	DeliveredAt *Time           `json:"delivered_at"`
	CompletedAt *Time           `json:"completed_at"`
	Deadline    Time            `json:"deadline"`
	DurationMS  *int64          `json:"duration_ms"`
	Attempts    int             `json:"attempts"`
	RunID       string          `json:"run_id,omitempty"`
	// EstimatedCost is the tool's estimate when the call was made; Cost
	// what its answer reported. Either is absent when there was none.
	EstimatedCost *float64 `json:"estimated_cost,omitempty"`
	Cost          *float64 `json:"cost,omitempty"`
}

// Event types a client receives on its stream or poll.
const (
	EventReady           = "ready"
	EventPing            = "ping"
	EventToolCallRequest = "tool_call_request"
	EventCallCancelled   = "call_cancelled"
)

// Reasons carried by a call_cancelled event.
const (
	CancelTimeout       = "timeout"
	CancelCancelled     = "cancelled"
	CancelSessionClosed = "session_closed"
	CancelDenied        = "denied"
)

// Event is one entry of a session's event log. Data is the complete JSON
// object sent to the client, encoded once when the event is stored.
type Event struct {
	Seq    int64           `json:"seq"`
	Type   string          `json:"type"`
	CallID string          `json:"call_id,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ToolCallRequest is the payload of a tool_call_request event.
type ToolCallRequest struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Deadline Time            `json:"deadline"`
	Attempt  int             `json:"attempt"`
}

// CallCancelled is the payload of a call_cancelled event.
type CallCancelled struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Time is a time.Time that travels as RFC 3339 with milliseconds, in UTC.
type Time struct{ time.Time }

// TimeLayout is the wire layout of every time.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// NewTime wraps t for the wire.
func NewTime(t time.Time) Time { return Time{t} }

// TimePtr wraps t for the wire, or returns nil for the zero time.
func TimePtr(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// String formats t in the wire layout.
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it accepts any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = parsed
	return nil
}

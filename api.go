package toolgate

import "encoding/json"

// CreateSessionRequest is the body of POST /v1/sessions.
type CreateSessionRequest struct {
	Client   ClientInfo      `json:"client"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// SessionCreated is the reply to POST /v1/sessions. The token is shown
// only here; the gateway keeps its hash.
type SessionCreated struct {
	SessionID        string `json:"session_id"`
	Token            string `json:"token"`
	HeartbeatMS      int64  `json:"heartbeat_ms"`
	PollWaitMS       int64  `json:"poll_wait_ms"`
	DefaultTimeoutMS int64  `json:"default_timeout_ms"`
}

// SessionView is a session with its tools and presence, as
// GET /v1/sessions/{sid} returns it.
type SessionView struct {
	Session
	Online     bool       `json:"online"`
	Connection Connection `json:"connection"`
	Tools      []ToolInfo `json:"tools"`
}

// Presences of a session, and of a tool (ToolInfo.Presence).
const (
	PresenceConnected = "connected" // a stream or a held poll holds it (or a poll did just now)
	PresenceAway      = "away"      // not connected, but within its grace: callable, calls wait
	PresenceOffline   = "offline"   // past its grace, or closed
)

// Connection is what the gateway node knows of how a session's client is
// connected: kept in memory, changed only when a stream or poll opens or
// ends.
type Connection struct {
	State string `json:"state"` // PresenceConnected, PresenceAway or PresenceOffline
	// Transport is "stream", "multi_stream", "poll" or "multi_poll" while
	// connected, else nil.
	Transport *string `json:"transport"`
	// HeartbeatMS is the ping interval of the current stream, nil
	// otherwise.
	HeartbeatMS *int64 `json:"heartbeat_ms"`
	// ConnectedAt is since when the current connection holds the session.
	ConnectedAt *Time `json:"connected_at"`
	// Cuts counts the streams and polls of the session that ended without
	// the gateway or the client ending them (since this node started).
	Cuts    int64    `json:"cuts"`
	LastCut *LastCut `json:"last_cut"`
}

// LastCut is when the session's last connection was cut, and how long it
// had lasted.
type LastCut struct {
	At      Time  `json:"at"`
	AfterMS int64 `json:"after_ms"`
}

// RegisterToolsRequest is the body of POST /v1/sessions/{sid}/tools.
type RegisterToolsRequest struct {
	Type    string     `json:"type"`
	Replace bool       `json:"replace"`
	Tools   []ToolSpec `json:"tools"`
}

// ToolRejection says why one tool of a registration was refused.
type ToolRejection struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ToolsRegistered is the reply to a registration.
type ToolsRegistered struct {
	Type       string          `json:"type"`
	Count      int             `json:"count"`
	Registered int             `json:"registered"`
	Rejected   []ToolRejection `json:"rejected"`
}

// Answer is a client's answer to a call: a tool_result or a tool_error.
type Answer struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Success *bool           `json:"success,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	Code    string          `json:"code,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	// Cost is what the call actually cost, when the client reports it
	// (in the unit of the tools' estimated_cost), beside output.
	Cost *float64 `json:"cost,omitempty"`
}

// Answer types.
const (
	AnswerResult  = "tool_result"
	AnswerError   = "tool_error"
	AnswerBatch   = "tool_results"
	AnswerAckType = "result_acknowledged"
	BatchAckType  = "results_acknowledged"
)

// AnswerAck is the gateway's word on one answer.
type AnswerAck struct {
	Type      string     `json:"type,omitempty"`
	ID        string     `json:"id"`
	Status    CallStatus `json:"status,omitempty"`
	Duplicate bool       `json:"duplicate,omitempty"`
	Error     *Error     `json:"error,omitempty"`
}

// ProgressReport is the body of POST /v1/sessions/{sid}/progress.
type ProgressReport struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Progress json.RawMessage `json:"progress"`
}

// ProgressAck is the reply to a progress report.
type ProgressAck struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Deadline Time   `json:"deadline"`
}

// CallRequest is the body of POST /v1/calls.
type CallRequest struct {
	SessionID string          `json:"session_id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	TimeoutMS int64           `json:"timeout_ms"`
	Wait      *bool           `json:"wait"`
}

// CallQuery filters GET /v1/calls.
type CallQuery struct {
	SessionID string
	Tool      string
	Status    CallStatus
	Before    string
	Limit     int
}

// CallList is the reply to GET /v1/calls.
type CallList struct {
	Calls      []*Call `json:"calls"`
	NextBefore *string `json:"next_before"`
}

// SessionQuery pages GET /v1/sessions.
type SessionQuery struct {
	Before string // a session id (next_before): only sessions created before it
	Limit  int    // sessions per page; 0 means the default
}

// SessionList is the reply to GET /v1/sessions: a page of the open
// sessions, newest first.
type SessionList struct {
	Sessions   []SessionView `json:"sessions"`
	NextBefore *string       `json:"next_before"`
}

// ToolQuery selects and pages GET /api/tools.
type ToolQuery struct {
	SessionID string // only this session's tools, all of them, unpaged
	After     string // a cursor (next_after): only the tools listed after it
	Limit     int    // tools per page; 0 means the default
}

// ToolList is the reply to GET /api/tools: a page of the tools, built-in
// ones first, then by session id and name.
type ToolList struct {
	Tools     []ToolInfo `json:"tools"`
	NextAfter *string    `json:"next_after"`
}

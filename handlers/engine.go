// Package handlers is toolgate's HTTP face: the chi router with the client
// API (sessions, registration, SSE and long-poll delivery, answers), the
// caller API (tools, calls, history), authentication, CORS, the mapping of
// error codes to HTTP statuses, and the embedded web assets.
//
// It declares what it needs of the engine as one small interface per
// resource (Auth, SessionAuth, Sessions, Tools, Delivery, Answers, Calls),
// each a field of Options; each resource's handlers hold only their own. The server
// package passes the engine's parts (engine.Engine's Sessions, Tools,
// Delivery and Calls, and the Engine itself for Auth).
package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/toolgate/toolgate"
)

// Auth is what the router itself needs: who holds which key, and
// whether the gateway can serve at all (GET /healthz).
type Auth interface {
	// IsAgentKey reports whether secret is the agent (caller) key.
	IsAgentKey(secret string) bool
	// IsClientKey reports whether secret may create sessions.
	IsClientKey(secret string) bool
	// Healthy returns nil when the gateway can serve.
	Healthy(ctx context.Context) error
}

// SessionAuth is what the routes of one session (and the multi-session
// stream and poll) need first: whether a token is the session's own.
type SessionAuth interface {
	// AuthorizeSession returns nil when token is the session's own.
	AuthorizeSession(ctx context.Context, sid, token string) error
}

// Sessions is what the session routes need: create, read, list, close.
type Sessions interface {
	CreateSession(ctx context.Context, req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error)
	SessionView(ctx context.Context, sid string) (*toolgate.SessionView, error)
	// ListSessions returns a page of the open sessions, newest first.
	ListSessions(ctx context.Context, q toolgate.SessionQuery) (*toolgate.SessionList, error)
	CloseSession(ctx context.Context, sid string) error
}

// Tools is what the tool routes need: a session registers and removes its
// tools; the caller lists them.
type Tools interface {
	RegisterTools(ctx context.Context, sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error)
	RemoveTool(ctx context.Context, sid, name string) error
	// ListToolsPage returns one session's tools, or a page of every tool.
	ListToolsPage(ctx context.Context, q toolgate.ToolQuery) (*toolgate.ToolList, error)
}

// Delivery is what the event stream and the long-poll need: a session's
// event log read from a cursor, a listener woken when it grows, and the
// record of what was sent.
type Delivery interface {
	// Listen opens a stream or a held poll of the session (via says
	// which). It is called before the first read of the log, so that
	// nothing appended in between is missed.
	Listen(sid string, via toolgate.Via) (toolgate.Listener, error)
	// ListenFunc opens a stream or a held poll whose wake-ups (new
	// events, the session's end) call notify instead of a channel; notify
	// must never block. A multi-session stream or poll listens to each of
	// its sessions this way, so that one goroutine (or none, in the
	// stream hub) serves them all.
	ListenFunc(sid string, via toolgate.Via, notify func()) (toolgate.Listener, error)
	// OpenEvents returns a tool_call_request for every open call of the
	// session, oldest first, and the cursor to read on from.
	OpenEvents(ctx context.Context, sid string) ([]toolgate.Event, int64, error)
	// EventsAfter returns the events after cursor, and the new cursor.
	EventsAfter(ctx context.Context, sid string, cursor int64) ([]toolgate.Event, int64, error)
	// CheckCursor refuses a cursor the session's log cannot resume from.
	CheckCursor(ctx context.Context, sid string, cursor int64) error
	// Delivered records that the events are being written to the
	// session's client; it is called before the bytes leave.
	Delivered(sid string, events []toolgate.Event)
}

// Answers is what a client's answers need: results and progress reports.
type Answers interface {
	SubmitAnswers(ctx context.Context, sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error)
	ReportProgress(ctx context.Context, sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error)
}

// Calls is what the caller's call routes need.
type Calls interface {
	CreateCall(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error)
	GetCall(ctx context.Context, id string) (*toolgate.Call, error)
	// WaitCall returns the call once it has ended or wait has passed: at
	// once for 0, with no limit but ctx for a negative wait.
	WaitCall(ctx context.Context, id string, wait time.Duration) (*toolgate.Call, error)
	ListCalls(ctx context.Context, q toolgate.CallQuery) (*toolgate.CallList, error)
	CancelCall(ctx context.Context, id string) (*toolgate.Call, error)
}

// Options configure the router.
type Options struct {
	// The gateway core, one part per resource: each resource's handlers
	// hold only their own.
	Auth        Auth
	SessionAuth SessionAuth // the engine's sessions, as the token check
	Sessions    Sessions
	Tools       Tools
	Delivery    Delivery
	Answers     Answers
	Calls       Calls

	Metrics        http.Handler // serves /metrics
	AllowedOrigins []string     // CORS origins; none disables CORS
	MaxBodyBytes   int64
	Heartbeat      time.Duration // ping interval on streams, and the most a stream may ask
	// MinHeartbeat is the least ping interval a stream may ask
	// (heartbeat_ms); 0 means 1 s (or Heartbeat, when that is less).
	MinHeartbeat time.Duration
	PollWait     time.Duration // default hold of a long-poll
	MaxPollWait  time.Duration // cap on wait_ms
	MaxCallWait  time.Duration // cap on GET /v1/calls/{id}?wait_ms
	StreamRetry  time.Duration // the retry: hint sent on streams
	// StreamWriteTimeout bounds one write to a stream (HTTP/1.1 or
	// HTTP/2): a client that does not take it in time is cut off, and
	// reconnects. 0 means 10 s.
	StreamWriteTimeout time.Duration
	// MaxStreamSessions bounds the sessions of one multi-session stream
	// or poll (POST /v1/streams, POST /v1/poll); 0 means 64.
	MaxStreamSessions int
	// SessionLimit bounds the sessions one client address may create;
	// its zero value limits nothing.
	SessionLimit SessionLimit
	// ListenAddr and AllowedHosts decide which Host headers are answered
	// (hostcheck.go): IP literals and localhost names always, the listen
	// address's host when it is a name, and each allowed host ("*" for
	// any, "*.example.com" for subdomains); others get 421.
	ListenAddr   string
	AllowedHosts []string
	// BodyReadTimeout bounds the reading of a request's body (see
	// readBodyWithin); 0 means 10 s.
	BodyReadTimeout time.Duration
	// ProxiedAddressShare bounds the requests in flight per client
	// address that come through a trusted proxy (SessionLimit's
	// TrustedProxies; addressshare.go): the share of connections the
	// listener keeps for direct clients. 0 or less: no bound.
	ProxiedAddressShare int
	// Mount, when set, adds routes (such as the agent loop's runs API) to
	// the router after the built-in ones.
	Mount func(r Router, api *API)
}

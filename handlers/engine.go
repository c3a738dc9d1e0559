// Package handlers is toolgate's HTTP face: the chi router with the client
// API (sessions, registration, SSE and long-poll delivery, answers), the
// caller API (tools, calls, history), authentication, CORS, the mapping of
// error codes to HTTP statuses, and the embedded web assets.
//
// It declares what it needs of the engine as the Engine interface; the
// server package provides the implementation and wires the two together.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolgate/toolgate"
)

// Engine is the gateway core as the handlers use it.
type Engine interface {
	IsAgentKey(secret string) bool
	IsClientKey(secret string) bool
	AuthorizeSession(ctx context.Context, sid, token string) error
	Healthy(ctx context.Context) error

	CreateSession(ctx context.Context, req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error)
	SessionView(ctx context.Context, sid string) (*toolgate.SessionView, error)
	ListSessions(ctx context.Context) ([]toolgate.SessionView, error)
	CloseSession(ctx context.Context, sid string) error

	RegisterTools(ctx context.Context, sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error)
	RemoveTool(ctx context.Context, sid, name string) error
	ListTools(ctx context.Context, sid string) ([]toolgate.ToolInfo, error)

	Listen(sid string, streaming bool) (Listener, error)
	ListenFunc(sid string, notify func()) (Listener, error)
	OpenEvents(ctx context.Context, sid string) ([]toolgate.Event, int64, error)
	EventsAfter(ctx context.Context, sid string, cursor int64) ([]toolgate.Event, int64, error)
	CheckCursor(ctx context.Context, sid string, cursor int64) error
	Delivered(sid string, events []toolgate.Event)

	SubmitAnswers(ctx context.Context, sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error)
	ReportProgress(ctx context.Context, sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error)

	CreateCall(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error)
	GetCall(ctx context.Context, id string) (*toolgate.Call, error)
	WaitCall(ctx context.Context, id string, wait time.Duration) (*toolgate.Call, error)
	ListCalls(ctx context.Context, q toolgate.CallQuery) (*toolgate.CallList, error)
	CancelCall(ctx context.Context, id string) (*toolgate.Call, error)
}

// Listener is one open stream or held poll of a session.
type Listener interface {
	// Wake receives a signal whenever the session's event log has grown.
	Wake() <-chan struct{}
	// Done is closed when the session has closed or expired.
	Done() <-chan struct{}
	// Close ends the stream or poll; the session's presence is updated.
	Close()
}

// Options configure the router.
type Options struct {
	Engine         Engine
	Metrics        http.Handler // serves /metrics
	AllowedOrigins []string     // CORS origins; none disables CORS
	MaxBodyBytes   int64
	Heartbeat      time.Duration // ping interval on streams
	PollWait       time.Duration // default hold of a long-poll
	MaxPollWait    time.Duration // cap on wait_ms
	MaxCallWait    time.Duration // cap on GET /v1/calls/{id}?wait_ms
	StreamRetry    time.Duration // the retry: hint sent on streams
	// Mount, when set, adds routes (such as the agent loop's runs API) to
	// the router after the built-in ones.
	Mount func(r Router, api *API)
	// Log receives internal errors; nil discards them.
	Log *slog.Logger
}

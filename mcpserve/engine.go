package mcpserve

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/toolgate/toolgate"
)

// Auth is what the endpoint needs to let a host in: the agent key.
// The engine implements it.
type Auth interface {
	// IsAgentKey reports whether secret is the agent (caller) key.
	IsAgentKey(secret string) bool
}

// Sessions is what the endpoint reads of the sessions (the engine's
// Sessions part implements it).
type Sessions interface {
	// SessionView returns a session with its tools (NOT_FOUND when
	// unknown; a closed one has ClosedAt set and no tools).
	SessionView(ctx context.Context, sid string) (*toolgate.SessionView, error)
}

// Tools is what the endpoint lists and watches of the tools (the
// engine's Tools part implements it).
type Tools interface {
	// GatewayTools lists the tools called without a session, by name.
	GatewayTools() []toolgate.ToolInfo
	// SessionIDs returns the ids of the open sessions.
	SessionIDs() []string
	// WatchTools calls fn after a session's tools changed ("" for the
	// tools called without a session); fn must not block.
	WatchTools(fn func(sessionID string)) (stop func())
}

// Calls is how the endpoint makes its calls (the engine's Calls part
// implements it).
type Calls interface {
	// CreateCall checks and stores a call, as POST /v1/calls does.
	CreateCall(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error)
	// WaitCallProgress returns the call once it has ended, passing on its
	// progress reports meanwhile; ctx's error when ctx ends first.
	WaitCallProgress(ctx context.Context, id string, progress func(json.RawMessage)) (*toolgate.Call, error)
	// CancelCall ends an open call as cancelled and tells its client.
	CancelCall(ctx context.Context, id string) (*toolgate.Call, error)
	// GetCall returns a call (NOT_FOUND when there is none).
	GetCall(ctx context.Context, id string) (*toolgate.Call, error)
}

// Defaults of Options.
const (
	// DefaultMaxSessions bounds the stateful (2025-11-25 and earlier) MCP
	// sessions alive at once, over /mcp and every /mcp/sessions/{sid}.
	DefaultMaxSessions = 1000
	// DefaultMaxListens bounds the subscriptions/listen streams (2026-07-28)
	// open at once, over /mcp and every /mcp/sessions/{sid}.
	DefaultMaxListens = 1000
	// DefaultListInterval paces the updates of the routes' tool lists: a
	// few at once, then one per interval, with the changes that come
	// meanwhile gathered into the next, so that a client flipping its
	// tools cannot send list_changed to every host more than a few times
	// a second.
	DefaultListInterval = 250 * time.Millisecond
	// DefaultSessionIdle is how long a stateful MCP session lives without
	// a request (its GET stream does not count) before it is closed; the
	// host then starts a new one (404 on its session id).
	DefaultSessionIdle = 30 * time.Minute
	// DefaultMaxSessionsPerKey bounds the durable MCP sessions alive at
	// once of one credential (the agent key), over every node.
	DefaultMaxSessionsPerKey = 1000
	// DefaultHeartbeat is the keep-alive interval of streamed replies.
	DefaultHeartbeat = 15 * time.Second
	// DefaultStreamWriteTimeout bounds one write to a streamed reply, as
	// on the gateway's other streams.
	DefaultStreamWriteTimeout = 10 * time.Second
)

// Options configure an Endpoint.
type Options struct {
	// The gateway's core, by part.
	Auth     Auth
	Sessions Sessions
	Tools    Tools
	Calls    Calls
	// Guard, when set, is the safety step every call's result and
	// progress pass before the host sees them.
	Guard OutputGuard
	Log   *slog.Logger // nil discards
	// AllowedOrigins are the browser origins, besides the gateway's own,
	// whose requests are served ("*" any, one "*" wildcard per entry as
	// in "https://*.example.com"); a request with any other Origin gets
	// 403.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request's body (the gateway's router applies
	// it first; the SDK is told the same).
	MaxBodyBytes int64
	// Heartbeat is how long a streamed reply may stay quiet before a
	// keep-alive comment is written (0: DefaultHeartbeat).
	Heartbeat time.Duration
	// StreamWriteTimeout bounds each write to a reply (0:
	// DefaultStreamWriteTimeout): a host that does not take it in time is
	// cut off.
	StreamWriteTimeout time.Duration
	// MaxSessions bounds the stateful MCP sessions alive at once (0:
	// DefaultMaxSessions); a new one over it is refused with 503.
	MaxSessions int
	// MaxListens bounds the subscriptions/listen streams open at once (0:
	// DefaultMaxListens); a new one over it is refused with 503.
	MaxListens int
	// ListInterval paces the updates of the tool lists, after a burst
	// of a few (0: DefaultListInterval).
	ListInterval time.Duration
	// SessionIdle closes a stateful MCP session after this long without a
	// request (0: DefaultSessionIdle).
	SessionIdle time.Duration
	// Tasks, when set, keeps the records of MCP tasks: tools/call may then
	// be a task (tasks/get, tasks/result, tasks/list, tasks/cancel); nil
	// offers no tasks.
	Tasks TaskStore
	// MaxTaskTTL bounds how long a task is kept, whatever ttl the host
	// asks for (0: DefaultMaxTaskTTL).
	MaxTaskTTL time.Duration
	// SessionStore, when set, keeps the stateful MCP sessions, their
	// streams' events and their calls in flight (nil: sessions live in
	// this process's memory only, their streams cannot be resumed).
	SessionStore SessionStore
	// MaxSessionsPerKey bounds the durable MCP sessions alive of one
	// credential, over every node (0: DefaultMaxSessionsPerKey); a new
	// one over it is refused with 503.
	MaxSessionsPerKey int
	// Now is the clock of the sessions' idle time (nil: time.Now).
	Now func() time.Time
	// Version is the gateway's version, told to hosts as serverInfo
	// (empty: the module version the binary was built from, else "dev").
	Version string
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxListens <= 0 {
		o.MaxListens = DefaultMaxListens
	}
	if o.ListInterval <= 0 {
		o.ListInterval = DefaultListInterval
	}
	if o.MaxSessionsPerKey <= 0 {
		o.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxTaskTTL <= 0 {
		o.MaxTaskTTL = DefaultMaxTaskTTL
	}
	if o.Version == "" {
		o.Version = "dev"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			o.Version = info.Main.Version
		}
	}
	return o
}

package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
)

// Options is what the engine is built with. The process (package server)
// fills every field from its configuration, defaults applied and checked;
// the engine takes them as given.
type Options struct {
	AgentKey  *AgentKey // the caller/admin secret (LoadAgentKey)
	ClientKey string    // when set, required to create sessions

	Heartbeat              time.Duration // the stream ping interval told to clients
	PollWait               time.Duration // default hold of a long-poll
	DefaultTimeout         time.Duration // per-call timeout when neither tool nor call sets one
	MinTimeout             time.Duration // smallest timeout a tool or call may ask for
	MaxTimeout             time.Duration // largest timeout
	ApprovalTimeout        time.Duration // how long a call may await approval
	SessionGrace           time.Duration // how long an offline session's tools stay callable
	SessionTTL             time.Duration // how long an unseen session lives
	SweepInterval          time.Duration // how often expiry and pruning run
	EventRetention         time.Duration // how long stream events are kept for replay
	MaxToolsPerSess        int           // tools one session may hold
	MaxMetadataBytes       int           // a session's metadata
	MaxOpenCallsPerSession int           // open calls one session may have
	MaxStreamsPerSession   int           // streams and held polls one session may hold

	// Hooks is the chain every call (before it is stored) and every remote
	// tool registration passes; nil is an empty chain.
	Hooks *toolgate.Hooks
	// Builtins are the tools that run inside the gateway (built before the
	// engine: see BuiltinTools); nil is none.
	Builtins BuiltinTools
	// OrphanRuns, when not nil, is signalled (without blocking) when this
	// node, sweeping for several nodes, has claimed the built-in calls of
	// stopped nodes: the agent host claims their runs then.
	OrphanRuns chan<- struct{}

	// Calls, when not nil, counts the calls created and ended (the
	// process's metrics).
	Calls CallCounter

	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// CallCounter counts calls: each created, and each ended with its status
// (created is when it was created, zero for a built-in call).
type CallCounter interface {
	CallCreated()
	CallEnded(status toolgate.CallStatus, created, now time.Time)
}

// noCounter counts nothing.
type noCounter struct{}

func (noCounter) CallCreated()                                        {}
func (noCounter) CallEnded(toolgate.CallStatus, time.Time, time.Time) {}

// BuiltinTools is what the engine needs to know of the tools that run
// inside the gateway: their names, so that no remote tool shadows one,
// their listing for GET /api/tools, the tools themselves, which the engine
// runs for calls without a session, and the check a remote registration
// passes (no shadowing, the registration rules). The agent host provides
// it, built before the engine.
type BuiltinTools interface {
	Has(name string) bool
	List() []toolgate.ToolInfo
	Builtin(name string) (BuiltinTool, bool)
	// SourceOf says where the tool called without a session of that name
	// comes from: built in, or an imported MCP server.
	SourceOf(name string) toolgate.ToolSource
	CheckRemote(sessionID string, spec toolgate.ToolSpec) error
	// AwaitListing lets a call of an imported MCP server's tool made
	// before that server has listed its tools wait for the listing, until
	// ctx ends, and returns TOOL_OFFLINE when it has not listed by then.
	AwaitListing(ctx context.Context, name string) error
}

// BuiltinTool is one tool that runs inside the gateway, as the engine runs
// it.
type BuiltinTool interface {
	Name() string
	// Spec is the tool's spec as callers see it.
	Spec() toolgate.ToolSpec
	// Unavailable says why the tool cannot run now (nil when it can): the
	// call is then refused, not stored.
	Unavailable() error
	// Estimate is the cost the tool estimates for these arguments (0 when
	// it does not).
	Estimate(args json.RawMessage) float64
	// SafeToRerun reports whether a call a stopped process was running
	// may run again with these arguments.
	SafeToRerun(args json.RawMessage) bool
	// Run executes the call.
	Run(ctx context.Context, args json.RawMessage, call BuiltinCall) (json.RawMessage, error)
}

// BuiltinCall is what a built-in tool is told of the call it runs.
type BuiltinCall struct {
	// Progress stores a progress report of the call.
	Progress func(json.RawMessage)
	// CallerSession is the session whose token started the call's run
	// ("" for the agent key), CallerAddress that run's client address.
	CallerSession, CallerAddress string
}

package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// BuiltinTools is what the engine needs to know of the tools that run inside
// the gateway: their names, so that no remote tool shadows one, their
// listing for GET /api/tools, the tools themselves, which the engine runs
// for calls without a session, and the check a remote registration passes
// (no shadowing, the registration rules). The agent loop's registry
// provides it.
type BuiltinTools interface {
	Has(name string) bool
	List() []toolgate.ToolInfo
	Builtin(name string) (toolgate.Tool, bool)
	// SourceOf says where the tool called without a session of that name
	// comes from: built in, or an imported MCP server.
	SourceOf(name string) toolgate.ToolSource
	CheckRemote(sessionID string, spec toolgate.ToolSpec) error
	// AwaitListing lets a call of an imported MCP server's tool made
	// before that server has listed its tools wait for the listing, until
	// ctx ends, and returns TOOL_OFFLINE when it has not listed by then.
	AwaitListing(ctx context.Context, name string) error
}

// Engine is the gateway's core. All state changes go through the store
// before anyone is told of them; the engine's memory holds only what can be
// rebuilt from the store (sessions, compiled tool schemas, presence,
// waiters and the deadline queue). Each piece of that memory is a type of
// its own, with its lock and the invariant it keeps: sessionTable
// (sessiontable.go), callWaiters (waiters.go), deliveryMarks (marks.go),
// progressWatchers (progress.go) and deadlineQueue (deadlines.go).
type Engine struct {
	cfg      Config
	st       *store.Store
	log      *slog.Logger
	now      func() time.Time
	agentKey agentKey // the caller/admin secret, known by its hash (agentkey.go)
	builtins BuiltinTools
	hooks    *toolgate.Hooks // before-call hooks and registration rules
	metrics  *metrics
	schemas  *schemaCache // compiled argument schemas, shared among tools

	// life ends when the engine closes; built-in tools run under it.
	life    context.Context
	endLife context.CancelFunc

	builtinMu      sync.Mutex
	builtinEntries map[string]*toolEntry // compiled schemas of built-in tools

	sessions  *sessionTable     // the open sessions, by id and token
	waiters   *callWaiters      // who waits for which call; the calls known open
	deadlines *deadlineQueue    // open calls' deadlines
	marks     *deliveryMarks    // deliveries not yet written
	progress  *progressWatchers // runs waiting on calls, told of their progress
	toolWatch *toolWatchers     // told when the tools callers can see change
	running   *runningBuiltins  // the built-in calls executing, to cancel

	// runAddresses is the client address each run in progress that a
	// session's token started came from (the agent's launch sets it), for
	// the built-in calls of that run (toolgate.WithCallerAddress).
	runAddresses sync.Map // run id → address

	// onOrphanRuns is the agent's, for several nodes (cluster.go): asked
	// to claim the runs of stopped nodes.
	onOrphanRuns atomic.Pointer[func(ctx context.Context)]

	// syncedAt is when the last re-read of other nodes' changes began
	// (cluster.go resync), under syncMu; syncRetry marks a retry pending.
	syncMu    sync.Mutex
	syncedAt  time.Time
	syncRetry atomic.Bool

	stop    chan struct{}
	stopped sync.WaitGroup
}

// NewEngine builds the engine over an open store and recovers its state:
// open sessions and their tools, the agent key, and the deadlines of open
// calls (those already past end as timed_out at once). Every session counts
// as seen now, so grace and time-to-live start again after a restart.
func NewEngine(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		cfg:       cfg,
		st:        st,
		log:       log,
		now:       time.Now,
		sessions:  newSessionTable(),
		marks:     newDeliveryMarks(st),
		progress:  newProgressWatchers(),
		toolWatch: newToolWatchers(),
		running:   newRunningBuiltins(),
		waiters:   newCallWaiters(),
		schemas:   newSchemaCache(),
		stop:      make(chan struct{}),
		hooks:     &toolgate.Hooks{},

		builtinEntries: map[string]*toolEntry{},
	}
	e.life, e.endLife = context.WithCancel(context.Background())
	if cfg.Now != nil {
		e.now = cfg.Now
	}
	if cfg.ToolNamePattern != "" {
		re, err := regexp.Compile(cfg.ToolNamePattern)
		if err != nil {
			return nil, fmt.Errorf("tool name pattern: %w", err)
		}
		e.hooks.OnBeforeRegister(toolgate.ToolNamePolicy(re))
	}
	if err := e.loadAgentKey(ctx); err != nil {
		return nil, err
	}
	if err := e.loadSessions(ctx); err != nil {
		return nil, err
	}
	e.metrics = newMetrics(e)
	e.deadlines = newDeadlineQueue(e.now, e.expireOpenCalls)
	open, err := st.OpenCallDeadlines(ctx)
	if err != nil {
		return nil, fmt.Errorf("load open calls: %w", err)
	}
	for _, c := range open {
		e.deadlines.schedule(c.ID, c.DeadlineTime())
		e.waiters.opened(c.ID, c.SessionID.String, 0) // stored already: counted, never refused
	}
	if st.Shared() {
		if err := e.joinCluster(ctx); err != nil {
			return nil, fmt.Errorf("join the other nodes: %w", err)
		}
	}
	e.stopped.Add(2)
	go func() { defer e.stopped.Done(); e.deadlines.run(e.stop) }()
	go func() { defer e.stopped.Done(); e.sweepLoop() }()
	log.Info("engine recovered", "sessions", e.sessions.count(), "open_calls", len(open))
	return e, nil
}

// SetBuiltins tells the engine which tools run inside the gateway. Call it
// before serving.
func (e *Engine) SetBuiltins(b BuiltinTools) { e.builtins = b }

// Hooks returns the chain every call (before it is stored) and every
// remote tool registration passes; embedders add their own hooks to it.
func (e *Engine) Hooks() *toolgate.Hooks { return e.hooks }

// Close stops the engine's background loops. The store stays open.
func (e *Engine) Close() {
	select {
	case <-e.stop:
		return
	default:
	}
	close(e.stop)
	e.endLife()
	e.stopped.Wait()
	e.marks.flush() // before the store closes
	e.sessions.closeAll()
}

// Store returns the engine's store.
func (e *Engine) Store() *store.Store { return e.st }

// IsClientKey reports whether secret may create sessions: true for anyone
// when no client key is configured, else the client key or the agent key.
func (e *Engine) IsClientKey(secret string) bool {
	if e.cfg.ClientKey == "" {
		return true
	}
	return secretEqual(secret, e.cfg.ClientKey) || e.IsAgentKey(secret)
}

// newSecret returns 32 random bytes, base64url-encoded.
func newSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken returns the stored form of a session token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func secretEqual(a, b string) bool {
	return len(a) > 0 && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Healthy reports whether the engine can serve: its database answers.
func (e *Engine) Healthy(ctx context.Context) error { return e.st.Ping(ctx) }

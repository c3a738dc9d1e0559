package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// Engine is the gateway's core. All state changes go through the store
// before anyone is told of them; the engine's memory holds only what can be
// rebuilt from the store (sessions, compiled tool schemas, presence,
// waiters and the deadline queue). Each piece of that memory is a type of
// its own, with its lock and the invariant it keeps: sessionTable
// (sessiontable.go), callWaiters (waiters.go), deliveryMarks (marks.go),
// progressWatchers (progress.go) and deadlineQueue (deadlines.go).
//
// The operations are grouped by concern, each a type over the state they
// share (core): Sessions, Calls, Delivery (streams, polls and answers),
// Tools, and the built-in calls (builtinCalls). Engine holds them as named
// fields, and a caller names the part it uses (eng.Calls.CreateCall);
// Engine's own methods are those of the whole (Close, the keys, Healthy,
// what the agent host asks).
type Engine struct {
	core *core

	Sessions *Sessions
	Calls    *Calls
	Delivery *Delivery
	Tools    *Tools
}

// Sessions are the engine's operations on sessions: create, authorize,
// view, list, close, and the sweep that expires them (sessions.go).
type Sessions struct{ *core }

// Calls are the engine's operations on calls: dispatch, wait, list,
// cancel, approve or deny, and expire (calls.go, approval.go,
// deadlines.go).
type Calls struct{ *core }

// Delivery is how calls reach clients and their answers come back:
// streams and held polls, the event log, delivery marks, answers and
// progress (delivery.go, answers.go).
type Delivery struct{ *core }

// Tools are the engine's operations on remote tools: register, remove,
// list and watch (tools.go, toollist.go, toolwatch.go).
type Tools struct{ *core }

// core is the state the engine's parts share, and the steps more than one
// of them takes (the end of a call, a session read again).
type core struct {
	cfg      Options
	st       *store.Store
	log      *slog.Logger
	now      func() time.Time
	agentKey *AgentKey // the caller/admin secret, known by its hash (agentkey.go)
	builtins BuiltinTools
	hooks    *toolgate.Hooks // before-call hooks and registration rules
	counter  CallCounter     // counts calls created and ended (the process's metrics)
	schemas  *schemaCache    // compiled argument schemas, shared among tools

	// life ends when the engine closes; built-in tools run under it.
	life    context.Context
	endLife context.CancelFunc

	sessions  *sessionTable     // the open sessions, by id and token
	waiters   *callWaiters      // who waits for which call; the calls known open
	deadlines *deadlineQueue    // open calls' deadlines
	marks     *deliveryMarks    // deliveries not yet written
	progress  *progressWatchers // runs waiting on calls, told of their progress
	toolWatch *toolWatchers     // told when the tools callers can see change
	running   *runningBuiltins  // the built-in calls executing, to cancel
	nodes     nodes             // the other nodes sharing the database, if any (nodes.go)

	// The parts, for the steps of one that another takes.
	sessionOps *Sessions
	callOps    *Calls
	toolOps    *Tools
	builtinOps *builtinCalls

	stop    chan struct{}
	stopped sync.WaitGroup
}

// New builds the engine over an open store and recovers its state: open
// sessions and their tools, the agent key, and the deadlines of open calls
// (those already past end as timed_out at once). Every session counts as
// seen now, so grace and time-to-live start again after a restart.
func New(ctx context.Context, opts Options, st *store.Store, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &core{
		cfg:       opts,
		st:        st,
		log:       log,
		now:       time.Now,
		agentKey:  opts.AgentKey,
		builtins:  opts.Builtins,
		hooks:     opts.Hooks,
		counter:   opts.Calls,
		sessions:  newSessionTable(),
		marks:     newDeliveryMarks(st),
		progress:  newProgressWatchers(),
		toolWatch: newToolWatchers(),
		running:   newRunningBuiltins(),
		waiters:   newCallWaiters(),
		schemas:   newSchemaCache(),
		stop:      make(chan struct{}),
	}
	e.sessionOps, e.callOps, e.toolOps = &Sessions{e}, &Calls{e}, &Tools{e}
	e.builtinOps = &builtinCalls{core: e, entries: map[string]*toolEntry{}}
	eng := &Engine{core: e, Sessions: e.sessionOps, Calls: e.callOps, Delivery: &Delivery{e}, Tools: e.toolOps}
	if e.counter == nil {
		e.counter = noCounter{}
	}
	if e.hooks == nil {
		e.hooks = &toolgate.Hooks{}
	}
	e.life, e.endLife = context.WithCancel(context.Background())
	e.nodes = alone{}
	if st.Shared() {
		e.nodes = &cluster{e: e}
	}
	if opts.Now != nil {
		e.now = opts.Now
	}
	if err := e.sessionOps.loadSessions(ctx); err != nil {
		return nil, err
	}
	e.deadlines = newDeadlineQueue(e.now, e.callOps.expireOpenCalls)
	open, err := st.OpenCallDeadlines(ctx)
	if err != nil {
		return nil, fmt.Errorf("load open calls: %w", err)
	}
	for _, c := range open {
		e.deadlines.schedule(c.ID, c.DeadlineTime())
		e.waiters.opened(c.ID, c.SessionID.String, 0) // stored already: counted, never refused
	}
	if err := e.nodes.join(ctx); err != nil {
		return nil, fmt.Errorf("join the other nodes: %w", err)
	}
	e.stopped.Add(2)
	go func() { defer e.stopped.Done(); e.deadlines.run(e.stop) }()
	go func() { defer e.stopped.Done(); e.sessionOps.sweepLoop() }()
	log.Info("engine recovered", "sessions", e.sessions.count(), "open_calls", len(open))
	return eng, nil
}

// Hooks returns the chain every call (before it is stored) and every
// remote tool registration passes; embedders add their own hooks to it.
func (e *Engine) Hooks() *toolgate.Hooks { return e.core.hooks }

// Close stops the engine's background loops. The store stays open.
func (e *Engine) Close() {
	select {
	case <-e.core.stop:
		return
	default:
	}
	close(e.core.stop)
	e.core.endLife()
	e.core.stopped.Wait()
	e.core.marks.flush() // before the store closes
	e.core.sessions.closeAll()
}

// Store returns the engine's store.
func (e *Engine) Store() *store.Store { return e.core.st }

// IsClientKey reports whether secret may create sessions: true for anyone
// when no client key is configured, else the client key or the agent key.
func (e *Engine) IsClientKey(secret string) bool {
	if e.core.cfg.ClientKey == "" {
		return true
	}
	return secretEqual(secret, e.core.cfg.ClientKey) || e.IsAgentKey(secret)
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
func (e *Engine) Healthy(ctx context.Context) error { return e.core.st.Ping(ctx) }

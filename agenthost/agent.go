package agenthost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/mcpimport"
	"github.com/toolgate/toolgate/store"
)

// Agent is the agent loop wired to the engine: the registry (built-in
// tools here, remote tools read from the engine), the runner with its
// model, and the runs going on in this process.
type Agent struct {
	Registry *agentloop.Registry
	Runner   *agentloop.Runner

	e      *engine.Engine
	tools  *Tools
	log    *slog.Logger
	limits *runLimits // runs started with a session's token

	mu    sync.Mutex
	feeds map[string]*runFeed // runs going on, by id
	runs  sync.WaitGroup
}

// noModelMessage says what to set when no model is configured.
const noModelMessage = "no model is configured: start toolgate with --llm-model (TOOLGATE_LLM_MODEL) and, unless the model is OpenAI's, " +
	"--llm-base-url (TOOLGATE_LLM_BASE_URL), e.g. --llm-base-url http://localhost:11434/v1 --llm-model llama3.1 for a local Ollama; " +
	"--llm-api-key (TOOLGATE_LLM_API_KEY) when the endpoint needs one"

// New builds the agent over the tools (built before the engine) and the
// engine, and sets up the model when one is configured. With other nodes
// sharing the database, it claims the runs of stopped nodes whenever the
// engine signals (Tools.OrphanRuns), until the engine closes.
func New(t *Tools, e *engine.Engine, opts Options, log *slog.Logger) (*Agent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := t.Registry
	reg.OnChange(e.ToolsChanged) // an imported server's tools
	var model agentloop.Model
	if opts.LLMModel != "" {
		m, err := agentloop.NewOpenAI(agentloop.OpenAIConfig{BaseURL: opts.LLMBaseURL, Model: opts.LLMModel, APIKey: opts.LLMAPIKey})
		if err != nil {
			return nil, err
		}
		model = m
	}
	a := &Agent{
		Registry: reg,
		Runner:   &agentloop.Runner{Registry: reg, Directory: e.Tools, Dispatcher: engineDispatcher{e.Calls}, Model: model, Store: runStore{st: e.Store(), now: e.Now}, Log: log},
		e:        e,
		tools:    t,
		log:      log,
		limits:   newRunLimits(opts),
		feeds:    map[string]*runFeed{},
	}
	if opts.MaxRunInputBytes > 0 {
		a.Runner.MaxInputBytes = opts.MaxRunInputBytes
	}
	// Tool outputs pass the safety step before a model sees them.
	a.Runner.Guard = t.guard
	warnShortKeys(opts, log)
	a.Runner.TrustRemoteOptOut = opts.ClientKey != "" // only clients given the key register tools
	a.runs.Go(func() {
		life := e.Context()
		for {
			select {
			case <-t.orphans:
				a.claimOrphanRuns(life)
			case <-life.Done():
				return
			}
		}
	})
	return a, nil
}

// withoutDisabled returns the built-in tools but those named in disabled
// (--disable-builtins); a name that is no built-in tool is an error, so a
// typo does not leave a tool on.
func withoutDisabled(builtins []toolgate.Tool, disabled []string) ([]toolgate.Tool, error) {
	off := map[string]bool{}
	names := make([]string, 0, len(builtins))
	for _, t := range builtins {
		names = append(names, t.Name())
	}
	for _, name := range disabled {
		if !slices.Contains(names, name) {
			slices.Sort(names)
			return nil, fmt.Errorf("--disable-builtins: there is no built-in tool %q; the built-in tools are %s", name, strings.Join(names, ", "))
		}
		off[name] = true
	}
	return slices.DeleteFunc(builtins, func(t toolgate.Tool) bool { return off[t.Name()] }), nil
}

// importMCPServers adds a tool set to reg for each imported MCP server
// (Options.MCPServers), offline until Tools.StartImports connects them; their
// prefixes are known from now on, so a call of one of their tools made
// before its server's first listing (a resumed run's) waits for it
// (Engine.awaitListing) rather than being refused as unknown. What
// the servers send back passes redact before it reaches a caller, a run's
// events or the log.
func importMCPServers(reg *agentloop.Registry, cfg Options, redact func(json.RawMessage) json.RawMessage, log *slog.Logger) ([]*mcpimport.Server, error) {
	var imports []*mcpimport.Server
	for _, c := range cfg.MCPServers {
		opts := cfg.MCPOptions
		opts.Log, opts.Redact = log, redact
		s := mcpimport.New(c, opts)
		if err := reg.AddToolSet(s); err != nil {
			return nil, fmt.Errorf("MCP server %s: %w", c.Name, err)
		}
		imports = append(imports, s)
	}
	return imports, nil
}

// Resume continues the runs and built-in calls a stopped process left
// open. A run waiting on a remote call finds that call again and goes on
// when the client answers.
func (a *Agent) Resume(ctx context.Context) error {
	if err := a.e.ResumeBuiltinCalls(ctx); err != nil {
		return fmt.Errorf("resume built-in calls: %w", err)
	}
	if a.e.Shared() {
		return nil // the runs of stopped nodes are claimed with their calls (claimOrphanRuns)
	}
	ids, err := a.e.Store().RunningRunIDs(ctx)
	if err != nil {
		return fmt.Errorf("resume runs: %w", err)
	}
	if len(ids) > 0 && a.Runner.Model == nil {
		a.log.Warn("runs left running wait for a model to be configured", "runs", len(ids))
		return nil
	}
	for _, id := range ids {
		// A run a session's token started takes its slot again.
		var origin handlers.RunOrigin
		if run, err := a.Runner.Store.LoadRun(ctx, id); err == nil && run.StartedBySession != "" {
			origin.Session = run.StartedBySession
			a.limits.resumed(origin)
		}
		a.launch(id, origin)
	}
	if len(ids) > 0 {
		a.log.Info("runs resumed", "runs", len(ids))
	}
	return nil
}

// claimOrphanRuns takes over the runs whose node's lease lapsed (that node
// was stopped or killed) and drives them here. The engine's sweep calls it
// on the node holding the sweeper lease, and resume at start-up.
func (a *Agent) claimOrphanRuns(ctx context.Context) {
	if a.Runner.Model == nil {
		return // left for a node with a model
	}
	orphans, err := a.e.Store().OrphanedRuns(ctx)
	if err != nil {
		a.log.Error("list orphaned runs", "err", err)
		return
	}
	for _, o := range orphans {
		claimed, err := store.WriteValue(ctx, a.e.Store(), func(tx *store.Tx) (bool, error) { return tx.ClaimRun(o) })
		if err != nil || !claimed {
			continue
		}
		var origin handlers.RunOrigin
		if run, err := a.Runner.Store.LoadRun(ctx, o.ID); err == nil && run.StartedBySession != "" {
			origin.Session = run.StartedBySession
			a.limits.resumed(origin)
		}
		a.log.Info("claimed a run of a stopped node", "run", o.ID, "from", o.Node)
		a.launch(o.ID, origin)
	}
}

// launch drives a stored run in the background, until it ends or the
// engine closes. The slot of its origin (the session whose token started
// it; none for the agent key) is given back before the run's end is told
// (its run_finished or run_failed event, the end of its feed), so that
// whoever sees the end may start the next run at once.
func (a *Agent) launch(id string, origin handlers.RunOrigin) *runFeed {
	feed := newRunFeed()
	a.mu.Lock()
	a.feeds[id] = feed
	a.mu.Unlock()
	forget := func() {}
	if origin.Session != "" && origin.Address != "" {
		forget = a.e.RunFrom(id, origin.Address)
	}
	a.runs.Add(1)
	go func() {
		defer a.runs.Done()
		defer forget()
		release := sync.OnceFunc(func() {
			if origin.Session != "" {
				a.limits.done(origin)
			}
		})
		a.Runner.Drive(a.e.Context(), id, func(ev agentloop.Event) {
			if ev.Type == agentloop.EventRunFinished || ev.Type == agentloop.EventRunFailed {
				release()
			}
			feed.emit(ev)
		})
		release()
		feed.end()
		a.mu.Lock()
		delete(a.feeds, id)
		a.mu.Unlock()
	}()
	return feed
}

// Wait waits for the runs' goroutines after the engine closed.
func (a *Agent) Wait() { a.runs.Wait() }

// IsAgentKey implements handlers.Agent.
func (a *Agent) IsAgentKey(secret string) bool { return a.e.IsAgentKey(secret) }

// StartRun implements handlers.Agent.
func (a *Agent) StartRun(ctx context.Context, req toolgate.RunRequest, origin handlers.RunOrigin) (string, toolgate.RunFeed, error) {
	if a.Runner.Model == nil {
		return "", nil, toolgate.Errorf(toolgate.EModelNotConfigured, "%s", noModelMessage)
	}
	var msgs []toolgate.ChatMessage
	if len(req.Messages) > 0 && string(req.Messages) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(req.Messages)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&msgs); err != nil {
			return "", nil, toolgate.Errorf(toolgate.EBadRequest, "messages must be an array of chat messages ({role, content, tool_calls?, tool_call_id?}): %v", err)
		}
	}
	if strings.TrimSpace(req.Input) != "" {
		msgs = append(msgs, toolgate.ChatMessage{Role: toolgate.RoleUser, Content: req.Input})
	}
	if req.SessionID != "" {
		if err := a.e.RequireSession(ctx, req.SessionID); err != nil {
			return "", nil, err
		}
	}
	// A session's token is bounded in the runs it has in progress and
	// their pace (runlimits.go); the agent key is not.
	startedBy := origin.Session
	if startedBy != "" {
		if err := a.limits.admit(origin, time.Now()); err != nil {
			return "", nil, err
		}
	}
	run, err := a.startRun(ctx, req, startedBy, msgs)
	if err != nil {
		if startedBy != "" {
			a.limits.done(origin)
		}
		return "", nil, err
	}
	a.log.Debug("run started", "run", run.ID, "session", run.SessionID, "max_steps", run.MaxSteps)
	return run.ID, a.launch(run.ID, origin), nil
}

// startRun stores a new run.
func (a *Agent) startRun(ctx context.Context, req toolgate.RunRequest, startedBy string, msgs []toolgate.ChatMessage) (*toolgate.Run, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	return a.Runner.Start(ctx, agentloop.NewRun{
		SessionID: req.SessionID, StartedBySession: startedBy, Messages: msgs, MaxSteps: req.MaxSteps, MaxCost: req.MaxCost,
	}, id.String(), a.e.Now())
}

// GetRun implements handlers.Agent: the run with its messages and its
// calls, oldest first.
func (a *Agent) GetRun(ctx context.Context, id, sessionID string) (*toolgate.Run, error) {
	run, err := a.Runner.Store.LoadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if sessionID != "" && run.SessionID != sessionID {
		return nil, toolgate.Errorf(toolgate.ENotFound, "session %s has no run %s", sessionID, id)
	}
	rows, err := a.e.Store().ListCalls(ctx, store.CallFilter{RunID: id, Limit: 1000})
	if err != nil {
		return nil, err
	}
	run.Calls = make([]*toolgate.Call, 0, len(rows))
	for i := range rows {
		run.Calls = append(run.Calls, rows[i].Call())
	}
	slices.Reverse(run.Calls)
	return run, nil
}

// RunFeed implements handlers.Agent.
func (a *Agent) RunFeed(id string) toolgate.RunFeed {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.feeds[id]; f != nil {
		return f
	}
	return nil
}

// ApproveCall implements handlers.Agent.
func (a *Agent) ApproveCall(ctx context.Context, id, secret string) (*toolgate.Call, error) {
	return a.e.Calls.ApproveCall(ctx, id, secret)
}

// DenyCall implements handlers.Agent.
func (a *Agent) DenyCall(ctx context.Context, id, secret, reason string) (*toolgate.Call, error) {
	return a.e.Calls.DenyCall(ctx, id, secret, reason)
}

// SetAutoApprove implements handlers.Agent.
func (a *Agent) SetAutoApprove(ctx context.Context, sid string, on bool) (*toolgate.SessionView, error) {
	return a.e.Calls.SetAutoApprove(ctx, sid, on)
}

// runFeed keeps a live run's events in memory for whoever streams them;
// emitting never blocks on a slow reader.
type runFeed struct {
	mu      sync.Mutex
	events  []toolgate.RunEvent
	changed chan struct{} // closed and replaced at every change
	ended   bool
}

func newRunFeed() *runFeed { return &runFeed{changed: make(chan struct{})} }

func (f *runFeed) emit(ev agentloop.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.events = append(f.events, toolgate.RunEvent{Type: ev.Type, Data: data})
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *runFeed) end() {
	f.mu.Lock()
	f.ended = true
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Next implements toolgate.RunFeed.
func (f *runFeed) Next(ctx context.Context, from int) ([]toolgate.RunEvent, bool, error) {
	for {
		f.mu.Lock()
		if from < len(f.events) {
			out := slices.Clone(f.events[from:])
			ended := f.ended
			f.mu.Unlock()
			return out, ended, nil
		}
		if f.ended {
			f.mu.Unlock()
			return nil, true, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// engineDispatcher is the engine's calls as the agent loop's Dispatcher:
// every call of a run goes through Dispatch and is waited on like any
// caller's.
type engineDispatcher struct{ calls *engine.Calls }

// Dispatch implements agentloop.Dispatcher.
func (d engineDispatcher) Dispatch(ctx context.Context, req agentloop.DispatchRequest) (*toolgate.Call, error) {
	call, _, err := d.calls.Dispatch(ctx, toolgate.CallRequest{SessionID: req.SessionID, Tool: req.Tool, Args: req.Args},
		engine.CallOptions{IdempotencyKey: req.IdempotencyKey, RunID: req.RunID})
	return call, err
}

// Wait implements agentloop.Dispatcher: it returns once the call has
// ended, passing on progress reports meanwhile.
func (d engineDispatcher) Wait(ctx context.Context, id string, progress func(json.RawMessage)) (*toolgate.Call, error) {
	return d.calls.WaitCallProgress(ctx, id, progress)
}

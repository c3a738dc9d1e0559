package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// DefaultMaxSteps is a run's max_steps when the caller gives none;
// MaxStepsLimit is the most a caller may ask for.
const (
	DefaultMaxSteps = 8
	MaxStepsLimit   = 64
)

// Runner drives runs: it asks the model, runs the tool calls the model
// picks in parallel through the gateway, appends their results (or errors,
// with codes and hints) as tool messages, and repeats until the model
// answers or the run has taken max_steps turns. Every step is stored before
// the next begins, so a run whose process died goes on from where it was:
// tool calls already made are found again by their idempotency keys and the
// model is not asked again for a turn it has taken.
type Runner struct {
	Registry *Registry
	// Directory lists the sessions' tools (the engine's tools), and
	// Dispatcher dispatches every call of a run's tools (the engine's
	// calls), so that each is stored.
	Directory  RemoteDirectory
	Dispatcher Dispatcher
	Model      Model // nil when no model is configured
	Store      RunStore
	Log        *slog.Logger // failures no caller sees; nil discards them
	// Guard is the safety step tool outputs pass before the model, the
	// run's events and its stored messages see them (safety.go); nil
	// passes them as they are.
	Guard OutputGuard
	// TrustRemoteOptOut honours a remote tool's requires_sanitization:
	// false; without it a remote tool's output always passes the whole
	// step (safety.go needsSanitization).
	TrustRemoteOptOut bool
	// MaxInputBytes, above zero, bounds what one run sends its model in
	// all (inputbound.go): every step resends the conversation so far.
	MaxInputBytes int64

	withheld withheldLog // the log of tools' descriptions withheld (safety_descriptions.go)
}

// ErrNoModel is returned by Start when no model is configured.
var ErrNoModel = errors.New("no model is configured")

// NewRun is what starting a run takes.
type NewRun struct {
	SessionID        string
	StartedBySession string
	Messages         []toolgate.ChatMessage
	MaxSteps         int
	// MaxCost, above zero, is the run's budget (see budget.go); zero is none.
	MaxCost float64
}

// Start checks and stores a new run; Drive then runs it.
func (r *Runner) Start(ctx context.Context, in NewRun, id string, now time.Time) (*toolgate.Run, error) {
	if r.Model == nil {
		return nil, ErrNoModel
	}
	if in.MaxSteps == 0 {
		in.MaxSteps = DefaultMaxSteps
	}
	if in.MaxSteps < 1 || in.MaxSteps > MaxStepsLimit {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "max_steps must be between 1 and %d", MaxStepsLimit)
	}
	if err := toolgate.CheckCost("max_cost", in.MaxCost); err != nil {
		return nil, err
	}
	if err := CheckMessages(in.Messages); err != nil {
		return nil, err
	}
	if err := r.checkFirstInput(in.Messages); err != nil {
		return nil, err
	}
	if in.SessionID != "" {
		// The session must exist; its tools are what the model is shown.
		if _, err := r.Registry.ToolsFor(ctx, r.Directory, r.Dispatcher, in.SessionID); err != nil {
			return nil, err
		}
	}
	run := &toolgate.Run{
		ID: id, SessionID: in.SessionID, StartedBySession: in.StartedBySession, Model: r.Model.Name(),
		Status: toolgate.RunRunning, MaxSteps: in.MaxSteps, MaxCost: in.MaxCost, CreatedAt: toolgate.NewTime(now), UpdatedAt: toolgate.NewTime(now),
		InputMessages: len(in.Messages), Messages: in.Messages,
	}
	if err := r.Store.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	return run, nil
}

// Drive runs a stored run until it ends or ctx ends (a shutdown: the run
// stays running in the store and a later Drive continues it). emit
// receives the run's events; it must not block for long.
func (r *Runner) Drive(ctx context.Context, runID string, emit func(Event)) {
	if emit == nil {
		emit = func(Event) {}
	}
	// A step once decided is stored whole, even while ctx ends.
	sctx := context.WithoutCancel(ctx)
	run, err := r.Store.LoadRun(ctx, runID)
	if err != nil {
		r.log().Error("load run", "run", runID, "err", err)
		return
	}
	if run.Status != toolgate.RunRunning {
		return
	}
	emit(Event{Type: EventRunStarted, RunID: run.ID, Run: summary(run)})
	input := newInputMeter(run) // what the run has sent its model (inputbound.go)
	for ctx.Err() == nil {
		if pending, step := unansweredToolCalls(run); len(pending) > 0 {
			// Between steps, none of the run's calls in flight: the budget
			// decides whether this step's calls are made at all.
			stop, err := r.checkStepBudget(ctx, run, step, pending)
			if r.stoppedForBudget(ctx, run, stop, err, emit) {
				return
			}
			msgs := r.runTools(ctx, run, step, pending, emit)
			if ctx.Err() != nil {
				return
			}
			if err := r.Store.AppendMessages(sctx, run.ID, run.Steps, msgs); err != nil {
				r.fail(sctx, run, toolgate.EInternal, "could not store the tool results", err, emit)
				return
			}
			run.Messages = append(run.Messages, msgs...)
			continue
		}
		if n := len(run.Messages); n > run.InputMessages && run.Messages[n-1].Role == toolgate.RoleAssistant {
			// The model answered before the process stopped; only the end was not stored.
			r.finish(sctx, run, run.Messages[n-1].Content, emit)
			return
		}
		// Before the model is asked again: what the run has cost so far,
		// which may have passed its budget (a call cost more than its
		// estimate).
		stop, err := r.updateCost(ctx, run)
		if r.stoppedForBudget(ctx, run, stop, err, emit) {
			return
		}
		if run.Steps >= run.MaxSteps {
			r.fail(ctx, run, toolgate.EMaxSteps, fmt.Sprintf("the model had not answered after max_steps=%d turns", run.MaxSteps), nil, emit)
			return
		}
		if r.Model == nil {
			r.log().Warn("run waits for a model to be configured", "run", run.ID)
			return
		}
		tools, err := r.Registry.ToolsFor(ctx, r.Directory, r.Dispatcher, run.SessionID)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.fail(ctx, run, toolgate.ErrorCode(err), "the run's tools are unavailable: "+toolgate.ErrorMessage(err), err, emit)
			return
		}
		defs := Definitions(r.guardDescriptions(run.ID, tools))
		if message, over := input.next(run.Messages, defs, r.MaxInputBytes); over {
			r.fail(ctx, run, toolgate.EMaxInput, message, nil, emit)
			return
		}
		reply, err := r.Model.Complete(ctx, run.Messages, defs)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.fail(ctx, run, toolgate.EModelError, "the model request failed: "+errorText(err), err, emit)
			return
		}
		reply.Role = toolgate.RoleAssistant
		reply = r.redactReply(reply)
		nameToolCalls(reply.ToolCalls, run.Steps+1)
		if err := r.Store.AppendMessages(sctx, run.ID, run.Steps+1, []toolgate.ChatMessage{reply}); err != nil {
			r.fail(sctx, run, toolgate.EInternal, "could not store the model's message", err, emit)
			return
		}
		run.Steps++
		run.Messages = append(run.Messages, reply)
		emit(Event{Type: EventModelMessage, RunID: run.ID, Step: run.Steps, Message: &reply})
		if len(reply.ToolCalls) == 0 {
			r.finish(sctx, run, reply.Content, emit)
			return
		}
	}
}

// stoppedForBudget ends the run when a budget check said stop, or when
// the run's cost could not be read and the run has a budget to keep, and
// reports whether Drive must return (also when ctx ended). A run without a
// budget whose cost could not be read goes on (its summaries show the cost
// last read).
func (r *Runner) stoppedForBudget(ctx context.Context, run *toolgate.Run, stop *toolgate.CallError, err error, emit func(Event)) bool {
	sctx := context.WithoutCancel(ctx)
	switch {
	case ctx.Err() != nil:
		return true
	case err != nil && run.MaxCost > 0:
		r.fail(sctx, run, toolgate.EInternal, "could not read what the run has cost", err, emit)
		return true
	case err != nil:
		r.log().Warn("read the cost of a run", "run", run.ID, "err", err)
		return false
	case stop == nil:
		return false
	}
	if _, err := r.updateCost(sctx, run); err != nil {
		r.log().Warn("read the cost of a run", "run", run.ID, "err", err)
	}
	r.fail(sctx, run, stop.Code, stop.Message, nil, emit)
	return true
}

// nameToolCalls gives every tool call of a model turn an id of its own:
// some local models leave ids out or repeat them, and the tool messages
// must say which call they answer.
func nameToolCalls(calls []toolgate.ChatToolCall, step int) {
	seen := map[string]bool{}
	for i := range calls {
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = fmt.Sprintf("call_%d_%d", step, i)
		}
		seen[calls[i].ID] = true
		calls[i].Type = "function"
	}
}

// unansweredToolCalls returns the tool calls of the run's last assistant
// message that no tool message answers yet, and the step that message was.
func unansweredToolCalls(run *toolgate.Run) ([]toolgate.ChatToolCall, int) {
	for i := len(run.Messages) - 1; i >= run.InputMessages; i-- {
		m := run.Messages[i]
		if m.Role != toolgate.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, later := range run.Messages[i+1:] {
			if later.Role == toolgate.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		var pending []toolgate.ChatToolCall
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				pending = append(pending, tc)
			}
		}
		return pending, run.Steps
	}
	return nil, run.Steps
}

// runTools runs the tool calls in parallel and returns their tool
// messages in the model's order.
func (r *Runner) runTools(ctx context.Context, run *toolgate.Run, step int, calls []toolgate.ChatToolCall, emit func(Event)) []toolgate.ChatMessage {
	msgs := make([]toolgate.ChatMessage, len(calls))
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs[i] = r.runTool(ctx, run, step, i, tc, emit)
		}()
	}
	wg.Wait()
	return msgs
}

// runTool makes one tool call through the gateway. Its idempotency key
// names the run, the step and the call's place in it, so doing it again
// after a restart finds the call made the first time.
func (r *Runner) runTool(ctx context.Context, run *toolgate.Run, step, index int, tc toolgate.ChatToolCall, emit func(Event)) toolgate.ChatMessage {
	name := tc.Function.Name
	args := strings.TrimSpace(tc.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	base := Event{RunID: run.ID, Step: step, ToolCallID: tc.ID, Tool: name}
	var startedOnce sync.Once
	started := func(call *toolgate.Call) {
		startedOnce.Do(func() {
			ev := base
			ev.Type, ev.Args = EventToolCallStarted, json.RawMessage(args)
			if !json.Valid(ev.Args) {
				ev.Args = nil
			}
			if call != nil {
				ev.CallID, ev.Status = call.ID, string(call.Status)
			}
			emit(ev)
			if call != nil && call.Status == toolgate.StatusAwaitingApproval {
				ev.Type, ev.Status = EventApprovalNeeded, ""
				emit(ev)
			}
		})
	}
	var res toolgate.Result
	var err error
	var tool toolgate.Tool
	if !json.Valid([]byte(args)) {
		err = toolgate.Errorf(toolgate.EInvalidArgs, "the arguments are not valid JSON: %s", truncate(args, 200))
	} else {
		tool = r.Registry.Resolve(name, run.SessionID, r.Dispatcher)
		if d, c := toolgate.Estimates(tool, json.RawMessage(args)); d > 0 || c > 0 {
			base.EstimatedDurationMS, base.EstimatedCost = d.Milliseconds(), c
		}
		inv := Invocation{
			RunID:          run.ID,
			IdempotencyKey: fmt.Sprintf("run:%s:%d:%d:%s", run.ID, step, index, tc.ID),
			Dispatched:     started,
			Progress: func(callID string, p json.RawMessage) {
				ev := base
				ev.Type, ev.CallID, ev.Progress = EventToolCallProgress, callID, r.guardProgress(tool, p)
				emit(ev)
			},
		}
		res, err = tool.Execute(WithInvocation(ctx, inv), json.RawMessage(args))
	}
	if ctx.Err() != nil {
		return toolgate.ChatMessage{}
	}
	started(res.Call)
	// The model, the events and the stored messages see the output after
	// the safety step; the call record keeps what the tool returned.
	g := r.guardResult(ctx, tool, run.SessionID, res.Output, err)
	ev := base
	if res.Call != nil {
		ev.CallID = res.Call.ID
	}
	if len(g.findings) > 0 {
		flagged := ev
		flagged.Type, flagged.Findings = EventToolOutputFlagged, g.findings
		emit(flagged)
	}
	ev.Type, ev.Sanitized = EventToolCallFinished, g.sanitized
	if res.Call != nil {
		ev.Status, ev.DurationMS = string(res.Call.Status), res.Call.DurationMS
	}
	if g.err != nil {
		ev.Error = &toolgate.CallError{Code: toolgate.ErrorCode(g.err), Message: toolgate.ErrorMessage(g.err)}
		if ev.Status == "" {
			ev.Status = string(toolgate.StatusFailed)
		}
	} else {
		ev.Output = g.output
	}
	emit(ev)
	return g.message(tc.ID, name)
}

func (r *Runner) finish(ctx context.Context, run *toolgate.Run, output string, emit func(Event)) {
	if err := r.Store.FinishRun(ctx, run.ID, toolgate.RunFinished, output, nil); err != nil {
		r.log().Error("finish run", "run", run.ID, "err", err)
		return
	}
	run.Status, run.Output = toolgate.RunFinished, output
	emit(Event{Type: EventRunFinished, RunID: run.ID, Run: summary(run)})
}

// fail ends the run failed with code and message, and logs cause.
// The message and the cause pass the guard's redaction first: they can
// hold what a model endpoint or a tool set sent back, which may repeat a
// key the gateway sent it (a 401 quoting the API key), and they reach the
// run's caller, its event stream and the log.
func (r *Runner) fail(ctx context.Context, run *toolgate.Run, code, message string, cause error, emit func(Event)) {
	message = r.redactText(message)
	if cause != nil {
		r.log().Warn("run failed", "run", run.ID, "code", code, "err", r.redactText(cause.Error()))
	}
	e := &toolgate.CallError{Code: code, Message: message}
	if err := r.Store.FinishRun(context.WithoutCancel(ctx), run.ID, toolgate.RunFailed, "", e); err != nil {
		r.log().Error("fail run", "run", run.ID, "err", err)
		return
	}
	run.Status, run.Error = toolgate.RunFailed, e
	emit(Event{Type: EventRunFailed, RunID: run.ID, Error: e, Run: summary(run)})
}

// redactReply redacts a model's reply before it is stored, emitted,
// returned or its tool calls made: an endpoint (or a proxy before it)
// may repeat the key the gateway sent it. Its text passes the whole
// step, as a failure's message does; its tool calls' arguments, which a
// client receives, have the gateway's own secrets redacted (a value
// shaped like a credential may be what the user asked the tool to get).
func (r *Runner) redactReply(reply toolgate.ChatMessage) toolgate.ChatMessage {
	if r.Guard == nil {
		return reply
	}
	reply.Content = r.redactText(reply.Content)
	if len(reply.ToolCalls) > 0 {
		calls := make([]toolgate.ChatToolCall, len(reply.ToolCalls))
		copy(calls, reply.ToolCalls)
		for i, tc := range calls {
			if tc.Function.Arguments == "" {
				continue
			}
			g := r.Guard.GuardOutput(tc.Function.Name, json.RawMessage(tc.Function.Arguments), false)
			if g.Redacted > 0 {
				calls[i].Function.Arguments = string(g.Output)
			}
		}
		reply.ToolCalls = calls
	}
	return reply
}

// redactText returns text with the gateway's secrets and the values that
// look like credentials redacted, by the guard's whole step (its findings
// are not used); text as it is without a guard.
func (r *Runner) redactText(text string) string {
	if r.Guard == nil || text == "" {
		return text
	}
	raw, err := json.Marshal(text)
	if err != nil {
		return text
	}
	var out string
	if json.Unmarshal(r.Guard.GuardOutput("", raw, true).Output, &out) != nil {
		return "(a message that could not be redacted)"
	}
	return out
}

// discardLog is the logger of a Runner given none.
var discardLog = slog.New(slog.DiscardHandler)

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return discardLog
}

// summary is the run without its messages and calls, for events.
func summary(run *toolgate.Run) *toolgate.Run {
	s := *run
	s.Messages, s.Calls = nil, nil
	return &s
}

// errorText is the message of a *toolgate.Error, or the error's text: a
// model endpoint's failure is worth showing as it is.
func errorText(err error) string {
	var te *toolgate.Error
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

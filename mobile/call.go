package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// ToolHandler answers calls with the call id, the tool's name and the
// arguments as JSON. The returned string is the output: valid JSON travels
// as that JSON value, anything else as a JSON string. A returned error
// becomes a tool_error (a *ToolError keeps its code; any other error is
// INTERNAL_ERROR).
type ToolHandler interface {
	Handle(callID, toolName, argsJSON string) (string, error)
}

// CallHandler answers calls with access to the whole call: its deadline,
// progress reports and cancellation. The result is read as for ToolHandler.
type CallHandler interface {
	HandleCall(call *Call) (string, error)
}

// simpleHandler adapts a ToolHandler to a CallHandler.
type simpleHandler struct{ h ToolHandler }

// HandleCall passes the call's id, tool name and arguments to Handle.
func (s simpleHandler) HandleCall(call *Call) (string, error) {
	return s.h.Handle(call.id, call.name, call.args)
}

// Reasons a call is cancelled, beyond the gateway's
// (timeout, cancelled, session_closed, denied).
const (
	// CancelClientClosed: Close was called while the call ran.
	CancelClientClosed = "client_closed"
	// CancelCallClosed: the gateway refused a progress report because the
	// call had already ended.
	CancelCallClosed = "call_closed"
)

// Call is one tool call as a handler sees it.
type Call struct {
	id       string
	name     string
	args     string
	attempt  int
	deadline time.Time
	client   *Client
	sess     sessionCredentials

	cancelOnce   sync.Once
	cancelled    chan struct{}
	cancelReason string
	finished     chan struct{}

	mu      sync.Mutex
	failure *ToolError
	cost    *float64 // ReportCost's, sent with the answer
}

func newCall(c *Client, sess sessionCredentials, req toolgate.ToolCallRequest) *Call {
	args := string(req.Args)
	if len(req.Args) == 0 || string(req.Args) == "null" {
		args = "{}"
	}
	return &Call{
		id: req.ID, name: req.Name, args: args, attempt: req.Attempt,
		deadline: req.Deadline.Time, client: c, sess: sess,
		cancelled: make(chan struct{}), finished: make(chan struct{}),
	}
}

// ID returns the call's id.
func (call *Call) ID() string { return call.id }

// ToolName returns the name of the tool called.
func (call *Call) ToolName() string { return call.name }

// ArgsJSON returns the arguments as a JSON object.
func (call *Call) ArgsJSON() string { return call.args }

// Attempt returns how many times the gateway has sent this call (1 the
// first time).
func (call *Call) Attempt() int { return call.attempt }

// DeadlineUnixMS returns the call's deadline in milliseconds since the Unix
// epoch, or 0 when the gateway sent none.
func (call *Call) DeadlineUnixMS() int64 {
	if call.deadline.IsZero() {
		return 0
	}
	return call.deadline.UnixMilli()
}

// Cancelled reports whether the call was cancelled: by the gateway (its
// deadline passed, the caller cancelled it, the session closed) or because
// the client is closing. A handler that sees it should stop; its answer is
// not sent.
func (call *Call) Cancelled() bool {
	select {
	case <-call.cancelled:
		return true
	default:
		return false
	}
}

// CancelReason returns why the call was cancelled, or "" while it is not.
func (call *Call) CancelReason() string {
	if !call.Cancelled() {
		return ""
	}
	return call.cancelReason
}

// WaitCancelled blocks until the call is cancelled, its handler has
// returned, or timeoutMS milliseconds have passed (a negative timeout waits
// without limit), and reports whether it was cancelled. A handler can run
// it in a goroutine to stop work it cannot poll.
func (call *Call) WaitCancelled(timeoutMS int64) bool {
	var timeout <-chan time.Time
	if timeoutMS >= 0 {
		t := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-call.cancelled:
		return true
	case <-call.finished:
		return call.Cancelled()
	case <-timeout:
		return call.Cancelled()
	}
}

// ReportProgress tells the gateway how far the call is. Each report pushes
// the call's deadline out by the tool's timeout (up to the gateway's
// maximum call length), so a long call stays alive while it reports.
// total and message may be zero and empty.
func (call *Call) ReportProgress(current, total int64, message string) error {
	if call.Cancelled() {
		return errors.New("the call was cancelled: " + call.cancelReason)
	}
	ctx, cancel := context.WithTimeout(call.client.lifeCtx, 15*time.Second)
	defer cancel()
	err := call.client.api.reportProgress(ctx, call.sess, call.id, progressReport{Current: current, Total: total, Message: message})
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Code == toolgate.ECallClosed {
		call.cancel(CancelCallClosed)
	}
	return err
}

// Fail records a tool error as the call's answer; whatever the handler
// returns afterwards is ignored. It is how a handler bound through gomobile
// reports a code and details. detailsJSON may be empty.
func (call *Call) Fail(code, message, detailsJSON string) {
	call.mu.Lock()
	defer call.mu.Unlock()
	if call.failure == nil {
		call.failure = NewToolError(code, message, detailsJSON)
	}
}

// ReportCost records what the call cost, in the unit of the tools'
// estimated_cost (the one a run's max_cost is in); it is sent with the
// call's answer, a result or an error alike (a failed call may still have
// cost something), and the gateway stores it and counts it toward the
// run's budget. A later report replaces an earlier one. A cost that is not
// a number from 0 to 1e12 is refused with an error, and nothing is
// recorded.
func (call *Call) ReportCost(cost float64) error {
	if err := toolgate.CheckCost("cost", cost); err != nil {
		return errors.New(toolgate.ErrorMessage(err))
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	call.cost = &cost
	return nil
}

// reportedCost is the cost ReportCost recorded, nil when none.
func (call *Call) reportedCost() *float64 {
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.cost
}

func (call *Call) recordedFailure() *ToolError {
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.failure
}

// cancel marks the call cancelled once, with the first reason.
func (call *Call) cancel(reason string) {
	call.cancelOnce.Do(func() {
		call.cancelReason = reason
		close(call.cancelled)
	})
}

// outputJSON turns a handler's result into the output value: valid JSON as
// it is, anything else as a JSON string.
func outputJSON(result string) json.RawMessage {
	if result != "" && json.Valid([]byte(result)) {
		return json.RawMessage(result)
	}
	b, _ := json.Marshal(result)
	return b
}

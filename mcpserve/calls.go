package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// Keys of the _meta objects toolgate reads and writes on tools/call.
const (
	// MetaCallID, on a result, is the toolgate call's id (GET /v1/calls/{id}).
	MetaCallID = metaKey + "call_id"
	// MetaStatus, on a result, is the call's final status.
	MetaStatus = metaKey + "status"
	// MetaIdempotencyKey, on a request, is the call's Idempotency-Key: a
	// request retried with the same key gets the same call.
	MetaIdempotencyKey = metaKey + "idempotency_key"
	// MetaTimeoutMS, on a request, is the call's timeout_ms.
	MetaTimeoutMS = metaKey + "timeout_ms"
	// MetaProgress, on a notifications/progress, is the client's progress
	// report as it sent it.
	MetaProgress = metaKey + "progress"
)

// errShuttingDown answers a call that comes while the endpoint closes.
var errShuttingDown = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is shutting down"}

// codeRequestCancelled is the JSON-RPC error code of a request cancelled
// by its sender (the TypeScript SDK's RequestCancelled).
const codeRequestCancelled = -32800

// errRequestCancelled is what the handler of a request the host gave up on
// returns; its reply is not sent (mute), as MCP says a cancelled request
// gets no response, and it could not reach a host that closed its stream.
var errRequestCancelled = &jsonrpc.Error{Code: codeRequestCancelled, Message: "request cancelled"}

// callHandler returns the handler of the MCP tool that calls tool in
// session sid ("" for a tool called without a session).
func (e *Endpoint) callHandler(sid, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !e.enter() {
			return nil, errShuttingDown
		}
		defer e.calls.Done()
		ctx, done := e.posts.tie(ctx, req.Extra)
		defer done()
		call := toolgate.CallRequest{SessionID: sid, Tool: tool, Args: req.Params.Arguments}
		idempotencyKey, timeoutMS, err := callMeta(req.Params.Meta)
		if err != nil {
			return refusal(err)
		}
		call.TimeoutMS = timeoutMS
		idempotencyKey = e.retryKey(req, idempotencyKey) // the same request again: the same call
		if tr := e.tasks.taskRequestOf(req.Params.Meta); tr != nil && e.opts.Tasks != nil {
			return e.tasks.startTask(ctx, call, idempotencyKey, tr) // tasks.go
		}
		// Counted before the call is found by its key, so that an earlier
		// attempt giving up meanwhile leaves it to this one.
		waiting := e.waiters.join(idempotencyKey)
		defer waiting.leave()
		// Stored whether or not the host is still there: a call stored
		// after it left is cancelled right below.
		created, err := e.dispatch.CreateCall(context.WithoutCancel(ctx), call, idempotencyKey)
		if err != nil {
			return refusal(err)
		}
		defer e.noteInflight(ctx, req, created.ID)()
		e.posts.streamingStarted(req.Extra)
		ended, err := e.dispatch.WaitCallProgress(ctx, created.ID, e.guardedProgress(ctx, sid, tool, progressForwarder(ctx, req)))
		if err != nil {
			if ctx.Err() == nil {
				return nil, err
			}
			// The host gave up on the request: unless a retry (the same
			// idempotency key) still waits on it, the call ends cancelled
			// and its client is told (call_cancelled).
			if waiting.leave() && !e.keepsCallsAtClose() {
				if _, cerr := e.dispatch.CancelCall(context.WithoutCancel(ctx), created.ID); cerr != nil && toolgate.ErrorCode(cerr) != toolgate.ECallClosed {
					e.log.Warn("MCP: cancel the call of a request the host gave up on", "call", created.ID, "err", cerr)
				}
			}
			e.posts.mute(req.Extra)
			return nil, errRequestCancelled
		}
		return e.guardedResultOf(ctx, ended), nil
	}
}

// callMeta reads toolgate's keys of a tools/call's _meta: the idempotency
// key (a string) and the timeout (a whole number of milliseconds); a
// value of another kind is BAD_REQUEST naming the key, as POST /v1/calls
// refuses a bad timeout_ms. A key set to null is as if absent.
func callMeta(meta mcp.Meta) (idempotencyKey string, timeoutMS int64, err error) {
	if v := meta[MetaIdempotencyKey]; v != nil {
		s, ok := v.(string)
		if !ok {
			return "", 0, toolgate.Errorf(toolgate.EBadRequest, "_meta %q must be a string", MetaIdempotencyKey)
		}
		// As POST /v1/calls checks the Idempotency-Key header.
		if err := toolgate.CheckPrintableText(s); err != nil {
			return "", 0, toolgate.Errorf(toolgate.EBadRequest, "_meta %q %v", MetaIdempotencyKey, err)
		}
		idempotencyKey = s
	}
	if v := meta[MetaTimeoutMS]; v != nil {
		ms, ok := wholeNumber(v)
		if !ok {
			return "", 0, toolgate.Errorf(toolgate.EBadRequest, "_meta %q must be a whole number of milliseconds", MetaTimeoutMS)
		}
		timeoutMS = ms
	}
	return idempotencyKey, timeoutMS, nil
}

// wholeNumber returns a decoded JSON number as an int64, if it is a whole
// number within int64's range.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		// float64(math.MaxInt64) is 2^63, itself out of range; NaN is
		// not equal to itself.
		if n != math.Trunc(n) || n < math.MinInt64 || n >= math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// refusal maps a call the gateway refused before storing it: a tool that
// is not there (any more) is a JSON-RPC error, as MCP says of unknown
// tools; any other refusal (INVALID_ARGS, SESSION_OFFLINE, RATE_LIMITED,
// TOOL_OFFLINE, DENIED by a hook, ...) is a tool result with isError, so
// that the model reads why.
func refusal(err error) (*mcp.CallToolResult, error) {
	code := toolgate.ErrorCode(err)
	if code == toolgate.EToolNotFound || code == toolgate.ENotFound {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolgate.ErrorMessage(err)}
	}
	callErr := toolgate.CallError{Code: code, Message: toolgate.ErrorMessage(err)}
	var te *toolgate.Error
	if errors.As(err, &te) && len(te.Details) > 0 {
		callErr.Details, _ = json.Marshal(te.Details)
	}
	return errorResult(callErr, nil), nil
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// CallOptions are the optional parts of a call beyond CallRequest.
type CallOptions struct {
	IdempotencyKey string // a retried request with the same key gets the same call
	RunID          string // the agent run the call belongs to
}

// CreateCall is Dispatch for the caller API: a call with an optional
// Idempotency-Key.
func (e *Calls) CreateCall(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error) {
	call, _, err := e.Dispatch(ctx, req, CallOptions{IdempotencyKey: idempotencyKey})
	return call, err
}

// Dispatch checks a call (tool known, arguments valid, session reachable,
// timeout within bounds, the before-call hooks), decides whether it must
// wait for approval, counts it against the tool's rate limit and stores it
// — with its tool_call_request event unless it awaits approval — all in one
// transaction, and only then wakes the session's streams and polls. A call
// without session_id is for a built-in tool: it is stored the same way
// (session_id NULL) and run inside the gateway. It returns the stored
// record and whether it was created now (false when an Idempotency-Key
// matched).
func (e *Calls) Dispatch(ctx context.Context, req toolgate.CallRequest, opts CallOptions) (*toolgate.Call, bool, error) {
	if opts.IdempotencyKey != "" {
		if len(opts.IdempotencyKey) > 255 {
			return nil, false, toolgate.Errorf(toolgate.EBadRequest, "Idempotency-Key is limited to 255 characters")
		}
		if row, err := e.st.FindCallByIdempotencyKey(ctx, opts.IdempotencyKey); err != nil || row != nil {
			if row != nil {
				return sameCallOrConflict(row, req)
			}
			return nil, false, err
		}
	}
	if req.Tool == "" {
		return nil, false, toolgate.Errorf(toolgate.EBadRequest, "tool is required")
	}
	args := req.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	args = json.RawMessage(compactJSON(args))
	if req.SessionID == "" {
		return e.builtinOps.dispatchBuiltin(ctx, req, args, opts)
	}

	now := e.now()
	var (
		tool                            *toolEntry
		closing, reachable, autoApprove bool
	)
	e.ensureSession(ctx, req.SessionID)
	look := func() bool {
		return e.sessions.with(req.SessionID, func(s *sessionState) {
			closing = s.closing > 0
			tool = s.tools[req.Tool]
			reachable = s.reachable(now, e.cfg)
			autoApprove = s.row.AutoApprove
		})
	}
	open := look()
	if open && (tool == nil || !reachable) && e.nodes.catchUp(ctx, req.SessionID) {
		// Registered, or seen, through another node a moment ago: the
		// tables say so before its note arrives.
		open = look()
	}
	if !open {
		return nil, false, e.missingSession(ctx, req.SessionID)
	}
	if closing {
		return nil, false, toolgate.Errorf(toolgate.ENotFound, "session %s is being closed", req.SessionID)
	}
	if tool == nil {
		return nil, false, toolgate.Errorf(toolgate.EToolNotFound, "session %s has no tool %q", req.SessionID, req.Tool)
	}
	if err := tool.validateArgs(ctx, args); err != nil {
		return nil, false, err
	}
	timeout, err := e.callTimeout(req.TimeoutMS, tool.spec.TimeoutMS)
	if err != nil {
		return nil, false, err
	}
	if !reachable {
		return nil, false, toolgate.Errorf(toolgate.ESessionOffline,
			"session %s has been offline longer than its grace period of %s", req.SessionID, e.cfg.SessionGrace)
	}
	check := toolgate.CallCheck{RunID: opts.RunID, SessionID: req.SessionID, Tool: req.Tool, Args: args,
		Source: toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: req.SessionID}}
	if err := e.hooks.CheckCall(ctx, check); err != nil {
		return nil, false, err
	}
	row, created, err := e.storeCall(ctx, req.SessionID, req.Tool, args, tool.spec, timeout, autoApprove, opts, now)
	if err != nil || !created {
		return callOf(row), false, err
	}
	if !e.wakeUnlessClosing(req.SessionID, row.Status == string(toolgate.StatusPending)) {
		return e.endIfSessionClosed(ctx, row)
	}
	e.log.Debug("call "+row.Status, "call", row.ID, "session", req.SessionID, "tool", req.Tool, "deadline", row.DeadlineTime())
	return row.Call(), true, nil
}

// wakeUnlessClosing wakes the session's streams and polls for a call just
// stored (when wake) and reports true, unless the session is being closed
// or is gone.
func (e *Calls) wakeUnlessClosing(sid string, wake bool) bool {
	open := false
	e.sessions.with(sid, func(s *sessionState) {
		if open = s.closing == 0; open && wake {
			s.wakeLocked()
		}
	})
	return open
}

// endIfSessionClosed settles a call stored while its session was being
// closed. The close cancels every call committed before its own write; a
// call committed after it would wait, never sent, until its deadline, and
// its caller with it. So, in one write that reads the session first: when
// the close is written, the call ends cancelled (unless the close already
// ended it); when it is not (still to come, and then it cancels the call
// itself, or failed, and the session stays open), the call stays as it is.
func (e *Calls) endIfSessionClosed(ctx context.Context, row *store.CallRow) (*toolgate.Call, bool, error) {
	sid := row.SessionID.String
	now := e.now()
	// Not cut short by the caller going away: the call is stored either way.
	ended, err := store.WriteValue(context.WithoutCancel(ctx), e.st, func(tx *store.Tx) (*endedCall, error) {
		sess, err := tx.GetSession(sid)
		if err != nil || sess == nil || !sess.Closed() {
			return nil, err
		}
		current, err := tx.GetCall(row.ID)
		if err != nil || current == nil {
			return nil, err
		}
		ended, ok, err := endCall(tx, current, sessionClosedOutcome(sess.CloseReason), toolgate.CancelSessionClosed, now)
		if err != nil || !ok {
			return nil, err
		}
		return &ended, nil
	})
	if err != nil {
		return nil, false, err
	}
	if ended != nil {
		e.afterCallsEnded(*ended)
		e.log.Debug("call cancelled: its session closed as it was stored", "call", row.ID, "session", sid)
	} else if row.Status == string(toolgate.StatusPending) {
		e.sessions.wake(sid) // the session may still be open
	}
	call, err := e.GetCall(ctx, row.ID)
	return call, true, err
}

// callOf is the record of a stored call, nil for none.
func callOf(row *store.CallRow) *toolgate.Call {
	if row == nil {
		return nil
	}
	return row.Call()
}

// callTimeout picks a call's timeout: the call's own, else the tool's,
// else the gateway's default; the call's is checked against the bounds.
func (e *core) callTimeout(callMS, toolMS int64) (time.Duration, error) {
	switch {
	case callMS != 0:
		if err := e.checkTimeout(callMS); err != nil {
			return 0, err
		}
		return time.Duration(callMS) * time.Millisecond, nil
	case toolMS != 0:
		return time.Duration(toolMS) * time.Millisecond, nil
	}
	return e.cfg.DefaultTimeout, nil
}

// storeCall stores a new call in one transaction: the rate limit is
// counted from the stored calls inside it, so two concurrent calls cannot
// both slip under the limit; a call that needs approval is stored as
// awaiting_approval, with the approval timeout as its deadline and no
// event for the client yet; any other call is stored pending with its
// tool_call_request event (for a remote tool). sessionID is empty for a
// built-in tool. The call keeps spec.EstimatedCost as its estimate.
func (e *core) storeCall(ctx context.Context, sessionID, tool string, args json.RawMessage, spec toolgate.ToolSpec,
	timeout time.Duration, autoApprove bool, opts CallOptions, now time.Time) (row *store.CallRow, created bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, err
	}
	status := toolgate.StatusPending
	if toolgate.NeedsApproval(spec.RequiresApproval, autoApprove) {
		status = toolgate.StatusAwaitingApproval
	}
	newRow := store.NewCallRow(id.String(), sessionID, tool, args, status, timeout, now)
	if status == toolgate.StatusAwaitingApproval {
		newRow.Deadline = now.Add(e.cfg.ApprovalTimeout).UnixMilli()
	}
	newRow.SetIdempotencyKey(opts.IdempotencyKey)
	newRow.SetRunID(opts.RunID)
	newRow.SetEstimatedCost(spec.EstimatedCost)
	newRow.RateLimited = spec.RateLimit != nil
	// Known open before the commit, not after: once committed, the call can
	// be delivered, answered and ended (afterCallsEnded forgets it) before this
	// goroutine runs again, and marking it open then would leave a waiter
	// waiting for an end that already happened.
	// It is also where a session's open calls are counted and bounded.
	if !e.waiters.opened(newRow.ID, sessionID, e.cfg.MaxOpenCallsPerSession) {
		return nil, false, tooManyOpenCalls(sessionID, e.cfg.MaxOpenCallsPerSession)
	}
	// A pending call of a session is sent to its client: its event is
	// encoded here, not on the writer's goroutine.
	sendsRequest := sessionID != "" && status == toolgate.StatusPending
	var request []byte
	if sendsRequest {
		request = requestEvent(newRow.ID, tool, args, newRow.DeadlineTime(), 1)
	}
	err = e.st.Write(ctx, func(tx *store.Tx) error {
		if sessionID != "" {
			if err := e.nodes.admitCall(tx, sessionID, tool); err != nil {
				return err
			}
		}
		if spec.RateLimit != nil {
			recent, err := tx.RecentCallTimes(sessionID, tool, now.Add(-toolgate.RateLimitHorizon))
			if err != nil {
				return err
			}
			if err := toolgate.CheckRateLimit(tool, spec.RateLimit, recent, now); err != nil {
				return store.Refuse(err)
			}
		}
		if err := tx.InsertCall(&newRow); err != nil {
			return err
		}
		if !sendsRequest {
			return nil
		}
		_, err := tx.AppendEvent(sessionID, toolgate.EventToolCallRequest, newRow.ID, request, now)
		return err
	})
	if err != nil {
		e.waiters.notStored(newRow.ID)
		if errors.Is(err, errSessionNotOpen) || toolgate.ErrorCode(err) == toolgate.EToolNotFound {
			e.refreshSession(ctx, sessionID) // catch up with what the table said
			if errors.Is(err, errSessionNotOpen) {
				return nil, false, e.missingSession(ctx, sessionID)
			}
		}
		if errors.Is(err, store.ErrDuplicateIdempotencyKey) {
			// The same key raced another request; that one's call wins.
			if existing, ferr := e.st.FindCallByIdempotencyKey(ctx, opts.IdempotencyKey); ferr == nil && existing != nil {
				if _, _, err := sameCallOrConflict(existing, toolgate.CallRequest{SessionID: sessionID, Tool: tool, Args: args}); err != nil {
					return nil, false, err
				}
				return existing, false, nil
			}
		}
		return nil, false, err
	}
	e.deadlines.schedule(newRow.ID, newRow.DeadlineTime())
	e.counter.CallCreated()
	return &newRow, true, nil
}

// sameCallOrConflict answers a retried request with the call its
// Idempotency-Key made first, or CONFLICT when the key was used for a
// different call (another session, tool or arguments).
func sameCallOrConflict(row *store.CallRow, req toolgate.CallRequest) (*toolgate.Call, bool, error) {
	args := req.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var stored, asked any
	sameArgs := json.Unmarshal([]byte(row.Args), &stored) == nil && json.Unmarshal(args, &asked) == nil &&
		reflect.DeepEqual(stored, asked)
	if row.SessionID.String != req.SessionID || row.Tool != req.Tool || !sameArgs {
		return nil, false, toolgate.Errorf(toolgate.EConflict,
			"this Idempotency-Key was already used for a different call (%s of session %q); use a new key", row.Tool, row.SessionID.String)
	}
	return row.Call(), false, nil
}

// errSessionNotOpen is the refusal of a call, in its transaction, for a
// session the table says is not open; the caller is told why by
// missingSession.
var errSessionNotOpen = errors.New("the session is not open")

// missingSession explains why a session id has no open session.
func (e *core) missingSession(ctx context.Context, sid string) error {
	row, err := e.st.GetSession(ctx, sid)
	if err != nil {
		return err
	}
	if row != nil && row.Closed() {
		return toolgate.Errorf(toolgate.ENotFound, "session %s has %s", sid, closedWord(row.CloseReason))
	}
	return toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
}

// GetCall reads a call record.
func (e *Calls) GetCall(ctx context.Context, id string) (*toolgate.Call, error) {
	row, err := e.st.GetCall(ctx, id)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no call %s", id)
	}
	return row.Call(), nil
}

// WaitCall returns a call's record once it has ended, or when wait has
// passed or ctx ends, whichever comes first (then in its current status).
// A zero wait returns at once; a negative one waits until the call ends.
func (e *Calls) WaitCall(ctx context.Context, id string, wait time.Duration) (*toolgate.Call, error) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		ended, open := e.waiters.wait(id)
		if !open || wait == 0 {
			c, err := e.GetCall(ctx, id)
			if err != nil || c.Status.Final() || wait == 0 {
				e.waiters.release(id, ended)
				return c, err
			}
		}
		select {
		case <-ended:
			// The call ended (the channel is already forgotten); read it again.
		case <-timer:
			e.waiters.release(id, ended)
			return e.GetCall(ctx, id)
		case <-ctx.Done():
			e.waiters.release(id, ended)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return e.GetCall(context.WithoutCancel(ctx), id)
			}
			return nil, ctx.Err()
		}
	}
}

// ListCalls returns the call history, newest first, a page at a time.
func (e *Calls) ListCalls(ctx context.Context, q toolgate.CallQuery) (*toolgate.CallList, error) {
	return ListCalls(ctx, e.st, q)
}

// ListCalls returns the call history of st, newest first, a page at a
// time: the engine's, for whoever needs it before the engine is built (the
// call_history tool).
func ListCalls(ctx context.Context, st *store.Store, q toolgate.CallQuery) (*toolgate.CallList, error) {
	if q.Status != "" && !q.Status.Valid() {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "unknown status %q", q.Status)
	}
	if q.Before != "" {
		if _, err := uuid.Parse(q.Before); err != nil {
			return nil, toolgate.Errorf(toolgate.EBadRequest, "before must be a call id from next_before")
		}
	}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	if q.Limit > 500 {
		q.Limit = 500
	}
	rows, err := st.ListCalls(ctx, store.CallFilter{
		SessionID: q.SessionID, Tool: q.Tool, Status: string(q.Status), Before: q.Before, Limit: q.Limit + 1,
	})
	if err != nil {
		return nil, err
	}
	list := &toolgate.CallList{Calls: make([]*toolgate.Call, 0, len(rows))}
	for i := range rows {
		if i == q.Limit {
			next := rows[i-1].ID
			list.NextBefore = &next
			break
		}
		list.Calls = append(list.Calls, rows[i].Call())
	}
	return list, nil
}

// CancelCall ends an open call as cancelled and tells its client. A call
// that has already ended is CALL_CLOSED.
func (e *Calls) CancelCall(ctx context.Context, id string) (*toolgate.Call, error) {
	now := e.now()
	ended, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (endedCall, error) {
		row, err := tx.GetCall(id)
		if err != nil {
			return endedCall{}, err
		}
		if row == nil {
			return endedCall{}, store.Refuse(toolgate.Errorf(toolgate.ENotFound, "no call %s", id))
		}
		closed := store.Refuse(toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended: %s", id, row.Status))
		if toolgate.CallStatus(row.Status).Final() {
			return endedCall{}, closed
		}
		ended, ok, err := endCall(tx, row, store.Outcome{
			Status: toolgate.StatusCancelled, ErrorCode: toolgate.ECancelled, ErrorMessage: "the call was cancelled by the caller",
		}, toolgate.CancelCancelled, now)
		if err == nil && !ok {
			return endedCall{}, closed // nothing was written
		}
		return ended, err
	})
	if err != nil {
		return nil, err
	}
	e.afterCallsEnded(ended)
	return e.GetCall(ctx, id)
}

// requestEvent encodes a tool_call_request once, at the time it is stored.
func requestEvent(id, tool string, args json.RawMessage, deadline time.Time, attempt int) []byte {
	b, _ := json.Marshal(toolgate.ToolCallRequest{
		Type: toolgate.EventToolCallRequest, ID: id, Name: tool, Args: args,
		Deadline: toolgate.NewTime(deadline), Attempt: attempt,
	})
	return b
}

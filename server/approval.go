package server

import (
	"context"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// approver is who approves or denies a call: the holder of the agent key,
// or a session (by its token).
type approver struct {
	agent     bool
	sessionID string
}

// approverOf resolves a bearer secret to an approver.
func (e *Engine) approverOf(secret string) (approver, error) {
	if secret == "" {
		return approver{}, toolgate.Errorf(toolgate.EUnauthenticated, "the agent key or a session token is required (Authorization: Bearer <secret>)")
	}
	if e.IsAgentKey(secret) {
		return approver{agent: true}, nil
	}
	var sid string
	e.ensureSessionByToken(e.life, hashToken(secret))
	if !e.sessions.withToken(hashToken(secret), func(s *sessionState) { sid = s.row.ID }) {
		return approver{}, toolgate.Errorf(toolgate.EUnauthenticated, "invalid agent key or session token")
	}
	return approver{sessionID: sid}, nil
}

// mayDecide checks inside tx that the approver may decide on the call: the
// agent key always, a session only for a call of a run that session
// started. A refusal comes as store.Refuse; any other error is a failed
// read.
func (a approver) mayDecide(tx *store.Tx, row *store.CallRow) error {
	if a.agent {
		return nil
	}
	if row.RunID.Valid {
		run, err := tx.GetRun(row.RunID.String)
		if err != nil {
			return err
		}
		if run != nil && run.StartedBySession != "" && run.StartedBySession == a.sessionID {
			return nil
		}
	}
	return store.Refuse(toolgate.Errorf(toolgate.EPermissionDenied, "only the agent key, or the token of the session that started the call's run, may approve or deny call %s", row.ID))
}

// checkAwaiting loads a call for a decision: it must exist, be visible to
// the approver and await approval.
func (e *Engine) checkAwaiting(tx *store.Tx, id string, by approver) (*store.CallRow, error) {
	row, err := tx.GetCall(id)
	if err != nil {
		return nil, err
	}
	// Every refusal below comes before the caller writes anything.
	if row == nil {
		return nil, store.Refuse(toolgate.Errorf(toolgate.ENotFound, "no call %s", id))
	}
	if err := by.mayDecide(tx, row); err != nil {
		return nil, err
	}
	status := toolgate.CallStatus(row.Status)
	if status.Final() {
		return nil, store.Refuse(toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended: %s", id, status))
	}
	if status != toolgate.StatusAwaitingApproval {
		return nil, store.Refuse(toolgate.Errorf(toolgate.EConflict, "call %s is not awaiting approval (it is %s)", id, status))
	}
	return row, nil
}

// ApproveCall lets a call that awaits approval go on: it becomes pending
// with a fresh deadline of its own timeout, and (for a remote tool) its
// tool_call_request event is stored in the same transaction, then the
// client is woken; a built-in tool starts running. secret is the agent key
// or the token of the session that started the call's run.
func (e *Engine) ApproveCall(ctx context.Context, id, secret string) (*toolgate.Call, error) {
	by, err := e.approverOf(secret)
	if err != nil {
		return nil, err
	}
	now := e.now()
	row, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (*store.CallRow, error) {
		row, err := e.checkAwaiting(tx, id, by)
		if err != nil {
			return nil, err
		}
		deadline := now.Add(msDuration(row.TimeoutMS))
		if _, err := tx.SetCallStatus(id, toolgate.StatusPending, deadline); err != nil {
			return nil, err
		}
		row.Status, row.Deadline = string(toolgate.StatusPending), deadline.UnixMilli()
		if !row.SessionID.Valid {
			return row, nil
		}
		_, err = tx.AppendEvent(row.SessionID.String, toolgate.EventToolCallRequest, id,
			requestEvent(id, row.Tool, []byte(row.Args), deadline, 1), now)
		return row, err
	})
	if err != nil {
		return nil, err
	}
	e.deadlines.schedule(id, row.DeadlineTime())
	if row.SessionID.Valid {
		e.sessions.wake(row.SessionID.String)
	} else if tool, _, err := e.builtinEntry(row.Tool); err == nil {
		e.startBuiltin(row, tool)
	}
	e.log.Debug("call approved", "call", id, "by_agent", by.agent, "by_session", by.sessionID)
	// The record as approved (pending): by the time it is read back the
	// client may already have been sent it.
	return row.Call(), nil
}

// DenyCall ends a call that awaits approval as denied (error DENIED, with
// the reason when given); its client was never sent it. A run waiting on
// it tells the model.
func (e *Engine) DenyCall(ctx context.Context, id, secret, reason string) (*toolgate.Call, error) {
	by, err := e.approverOf(secret)
	if err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if len(reason) > 1000 {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "reason is limited to 1000 characters")
	}
	message := "the call was denied"
	if reason != "" {
		message += ": " + reason
	}
	now := e.now()
	ended, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (endedCall, error) {
		row, err := e.checkAwaiting(tx, id, by)
		if err != nil {
			return endedCall{}, err
		}
		// Awaiting approval: its client was never sent it, and is not told.
		ended, ok, err := endCall(tx, row, store.Outcome{Status: toolgate.StatusDenied, ErrorCode: toolgate.EDenied, ErrorMessage: message},
			toolgate.CancelDenied, now)
		if err == nil && !ok {
			// Not open any more, though just read so: nothing was written.
			return endedCall{}, store.Refuse(toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended", id))
		}
		return ended, err
	})
	if err != nil {
		return nil, err
	}
	e.afterCallsEnded(ended)
	e.log.Debug("call denied", "call", id, "by_agent", by.agent, "by_session", by.sessionID)
	return e.GetCall(ctx, id)
}

// SetAutoApprove changes a session's auto-approve setting: when on, calls
// to its tools marked unless_auto_approved go out without waiting (tools
// marked always still wait).
func (e *Engine) SetAutoApprove(ctx context.Context, sid string, on bool) (*toolgate.SessionView, error) {
	if !e.ensureSession(ctx, sid) {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no open session %s", sid)
	}
	version, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (int64, error) {
		version, err := tx.BumpSession(sid, e.now())
		if err != nil || version == 0 {
			return 0, store.Refuse(orClosed(err, sid))
		}
		return version, tx.SetAutoApprove(sid, on)
	})
	if err != nil {
		return nil, err
	}
	e.sessions.with(sid, func(s *sessionState) {
		s.version = max(s.version, version)
		s.row.AutoApprove = on
	})
	return e.SessionView(ctx, sid)
}

// msDuration turns stored milliseconds into a duration.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

package engine

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

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
func (e *Calls) approverOf(secret string) (approver, error) {
	if secret == "" {
		return approver{}, toolgate.Errorf(toolgate.EUnauthenticated, "the agent key or a session token is required (Authorization: Bearer <secret>)")
	}
	if e.isAgentKey(secret) {
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
// started to one of its own tools (which its client registered). The
// operator's tools (built-in, sandboxed, imported over MCP) are called
// without a session: their approval is the agent key's alone, or a
// session's run could approve what the operator gated. A refusal comes as
// store.Refuse; any other error is a failed read.
func (a approver) mayDecide(tx *store.Tx, row *store.CallRow) error {
	if a.agent {
		return nil
	}
	if !row.SessionID.Valid || row.SessionID.String != a.sessionID {
		return store.Refuse(toolgate.Errorf(toolgate.EPermissionDenied,
			"call %s is to a tool of the gateway's operator (not one of this session's own tools): only the agent key may approve or deny it", row.ID))
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
func (e *Calls) checkAwaiting(tx *store.Tx, id string, by approver) (*store.CallRow, error) {
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
	if err := notAwaiting(row); err != nil {
		return nil, err
	}
	return row, nil
}

// notAwaiting is the refusal of a decision on a call that does not await
// approval (CALL_CLOSED when it has ended, CONFLICT otherwise); nil when
// it does.
func notAwaiting(row *store.CallRow) error {
	status := toolgate.CallStatus(row.Status)
	if status.Final() {
		return store.Refuse(toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended: %s", row.ID, status))
	}
	if status != toolgate.StatusAwaitingApproval {
		return store.Refuse(toolgate.Errorf(toolgate.EConflict, "call %s is not awaiting approval (it is %s)", row.ID, status))
	}
	return nil
}

// decidedMeanwhile is the refusal of a decision whose conditional write
// changed nothing: another decision, or the approval deadline, came
// between checkAwaiting's read and the write (on PostgreSQL, another
// node's). The call is read again to say what it became.
func decidedMeanwhile(tx *store.Tx, id string) error {
	row, err := tx.GetCall(id)
	if err != nil {
		return err
	}
	if row == nil {
		return store.Refuse(toolgate.Errorf(toolgate.ENotFound, "no call %s", id))
	}
	if err := notAwaiting(row); err != nil {
		return err
	}
	// Still awaiting approval as read now, though the write found it
	// otherwise: it cannot go back, so this is only a safety net.
	return store.Refuse(toolgate.Errorf(toolgate.EConflict, "call %s was decided on by another request at the same time", id))
}

// ApproveCall lets a call that awaits approval go on: it becomes pending
// with a fresh deadline of its own timeout, and (for a remote tool) its
// tool_call_request event is stored in the same transaction, then the
// client is woken; a built-in tool starts running. secret is the agent key,
// or the token of the session that started the call's run when the call is
// to one of that session's own tools.
func (e *Calls) ApproveCall(ctx context.Context, id, secret string) (*toolgate.Call, error) {
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
		// Conditional: of two decisions at once (on any nodes) one changes
		// the row; the other, here, stores no event and is refused.
		approved, err := tx.ApproveCall(id, deadline)
		if err != nil {
			return nil, err
		}
		if !approved {
			return nil, decidedMeanwhile(tx, id)
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
	} else if tool, _, err := e.builtinOps.builtinEntry(row.Tool); err == nil {
		e.builtinOps.startBuiltin(row, tool)
	}
	e.log.Debug("call approved", "call", id, "by_agent", by.agent, "by_session", by.sessionID)
	// The record as approved (pending): by the time it is read back the
	// client may already have been sent it.
	return row.Call(), nil
}

// DenyCall ends a call that awaits approval as denied (error DENIED, with
// the reason when given); its client was never sent it. A run waiting on
// it tells the model.
func (e *Calls) DenyCall(ctx context.Context, id, secret, reason string) (*toolgate.Call, error) {
	by, err := e.approverOf(secret)
	if err != nil {
		return nil, err
	}
	reason, err = denyReason(reason)
	if err != nil {
		return nil, err
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
		// Conditional: an approve committed since the read wins, and this
		// deny is refused (the client may already have the call).
		denied, err := tx.FinishAwaiting(id, store.Outcome{Status: toolgate.StatusDenied, ErrorCode: toolgate.EDenied, ErrorMessage: message}, now)
		if err != nil {
			return endedCall{}, err
		}
		if !denied {
			return endedCall{}, decidedMeanwhile(tx, id)
		}
		return endedCall{id: id, status: toolgate.StatusDenied, created: row.CreatedTime()}, nil
	})
	if err != nil {
		return nil, err
	}
	e.afterCallsEnded(ended)
	e.log.Debug("call denied", "call", id, "by_agent", by.agent, "by_session", by.sessionID)
	return e.GetCall(ctx, id)
}

// maxDenyReason is the longest deny reason, in characters (PROTOCOL's
// limits table).
const maxDenyReason = 1000

// denyReason checks a deny reason and returns it trimmed: at most
// maxDenyReason characters, and no NUL character, which PostgreSQL's TEXT
// cannot hold (SQLite's can: the same reason is refused on both).
func denyReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if utf8.RuneCountInString(reason) > maxDenyReason {
		return "", toolgate.Errorf(toolgate.EBadRequest, "reason is limited to %d characters", maxDenyReason)
	}
	if strings.ContainsRune(reason, 0) {
		return "", toolgate.Errorf(toolgate.EBadRequest, "reason must not contain the NUL character (\\u0000)")
	}
	return reason, nil
}

// SetAutoApprove changes a session's auto-approve setting: when on, calls
// to its tools marked unless_auto_approved go out without waiting (tools
// marked always still wait).
func (e *Calls) SetAutoApprove(ctx context.Context, sid string, on bool) (*toolgate.SessionView, error) {
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
	e.applyOwnChange(ctx, sid, version, func(s *sessionState) { s.row.AutoApprove = on })
	return e.sessionOps.SessionView(ctx, sid)
}

// msDuration turns stored milliseconds into a duration.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

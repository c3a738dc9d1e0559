package engine

import (
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// A call ends in two steps, the same wherever it ends: endCall inside the
// write transaction, then, once that has committed, afterCallsEnded with
// what endCall returned. Answers and built-in tools end calls with their
// own outcome statements and take only the second step.

// endedCall is a call ended in a transaction that has since committed:
// what afterCallsEnded needs to tell everyone.
type endedCall struct {
	id      string
	status  toolgate.CallStatus
	created time.Time
	// toldSession is the session whose client was sent call_cancelled for
	// it (its streams and polls are woken); empty when none was.
	toldSession string
}

// endCall ends an open call from the gateway's side (cancelled, timed out,
// denied, its session closed) inside tx: the call, row as read in this
// transaction, moves to o's final status, and, when its client was sent the
// call — a session's call past approval — a call_cancelled event with
// reason is appended. ok is false, and nothing is changed, when the call
// is not open any more. After the commit, pass the result to
// afterCallsEnded.
func endCall(tx *store.Tx, row *store.CallRow, o store.Outcome, reason string, now time.Time) (ended endedCall, ok bool, err error) {
	if ok, err = tx.FinishCall(row.ID, o, now); err != nil || !ok {
		return endedCall{}, false, err
	}
	ended = endedCall{id: row.ID, status: o.Status, created: row.CreatedTime()}
	if row.SessionID.Valid && row.Status != string(toolgate.StatusAwaitingApproval) {
		if _, err := tx.AppendEvent(row.SessionID.String, toolgate.EventCallCancelled, row.ID, cancelledEvent(row.ID, reason), now); err != nil {
			return endedCall{}, false, err
		}
		ended.toldSession = row.SessionID.String
	}
	return ended, true, nil
}

// afterCallsEnded tells of calls whose end has committed: the streams and
// polls of each session sent a call_cancelled wake, then everyone waiting
// on each call does, and the metrics count it.
func (e *core) afterCallsEnded(ended ...endedCall) {
	for _, c := range ended {
		if c.toldSession != "" {
			e.sessions.wake(c.toldSession)
		}
		e.waiters.ended(c.id)
		e.running.stop(c.id) // a tool running inside the gateway for it stops
		e.counter.CallEnded(c.status, c.created, e.now())
		e.log.Debug("call "+string(c.status), "call", c.id)
	}
}

// cancelledEvent encodes a call_cancelled event.
func cancelledEvent(id, reason string) []byte {
	b, _ := json.Marshal(toolgate.CallCancelled{Type: toolgate.EventCallCancelled, ID: id, Reason: reason})
	return b
}

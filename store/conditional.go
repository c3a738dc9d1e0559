package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/toolgate/toolgate"
)

// Conditional ends and changes of a call: each statement carries, in its
// own WHERE clause, the state the decision was made on, so that of two
// writers deciding on the same call (on several nodes, or a reader's
// snapshot gone stale between its read and its write) exactly one changes
// the row and the other is told it changed nothing. A check made by a
// read before the write is not enough on PostgreSQL, whose reads take no
// lock: both writers can read "awaiting approval" and both write.

var (
	qApproveCall = query(`UPDATE calls SET status = 'pending', deadline = ? WHERE id = ? AND status = 'awaiting_approval'`)
	// finishColumns are FinishCall's SET list; the statements differ only
	// in which calls they may end.
	qFinishAwaiting = query(`UPDATE calls SET ` + finishColumns + ` WHERE id = ? AND status = 'awaiting_approval'`)
	qExpireAwaiting = query(`UPDATE calls SET ` + finishColumns + ` WHERE id = ? AND status = 'awaiting_approval' AND deadline <= ?`)
	qExpireSent     = query(`UPDATE calls SET ` + finishColumns + ` WHERE id = ? AND (status = 'pending' OR status = 'delivered') AND deadline <= ?`)
	qFinishOwn      = query(`UPDATE calls SET ` + finishColumns + ` WHERE id = ? AND ` + openCall + ` AND node = ?`)
	qCallNode       = query(`SELECT COALESCE(node, '') FROM calls WHERE id = ?`)
)

// FinishOwnCall ends an open call of a tool inside the gateway with the
// outcome of this node's execution, only while this node is the one
// running it: a node that lost the call to a claim (its lease lapsed
// while it was alive but cut off) does not store its outcome over the
// claimer's run. It reports false, and changes nothing, otherwise.
func (tx *Tx) FinishOwnCall(id string, o Outcome, now time.Time) (bool, error) {
	return tx.finishWhere(id, qFinishOwn, o.finishArgs(now, id, tx.node)...)
}

// CallNode returns the node running a call of a tool inside the gateway
// ("" for none, or for a client's call).
func (s *Store) CallNode(ctx context.Context, id string) (string, error) {
	var node string
	err := s.read.get(ctx, &node, qCallNode, id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return node, err
}

// finishColumns is what ending a call sets, in the order of
// Outcome.finishArgs: the outcome's values, then completed_at.
const finishColumns = `status = ?, output = ?, error_code = ?, error_message = ?, error_details = ?, cost = ?, completed_at = ?`

// ApproveCall moves a call that awaits approval to pending with a new
// deadline. It reports false, and changes nothing, when the call does not
// await approval any more (another approve or a deny came first, or it
// timed out): then the caller reads the call to say why.
func (tx *Tx) ApproveCall(id string, deadline time.Time) (bool, error) {
	res, err := tx.exec(qApproveCall, ms(deadline), id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		tx.changeRow(id, func(r *CallRow) { r.Status, r.Deadline = string(toolgate.StatusPending), ms(deadline) })
		tx.note(ChangeCall, id)
	}
	return n > 0, nil
}

// FinishAwaiting is FinishCall for a call that awaits approval (a deny):
// it reports false, and changes nothing, when the call does not await
// approval any more, even if it is still open (approved a moment ago).
func (tx *Tx) FinishAwaiting(id string, o Outcome, now time.Time) (bool, error) {
	return tx.finishWhere(id, qFinishAwaiting, o.finishArgs(now, id)...)
}

// ExpireCall is FinishCall for a call whose deadline has passed: it ends
// the call only while its stored deadline is at or before now (a progress
// report committed after the caller read the call pushes the deadline out,
// and wins) and while it is in the phase the caller read it in — awaiting
// approval when awaiting is true, pending or delivered otherwise — since
// the two phases end differently (only a sent call's client is told). It
// reports false, and changes nothing, otherwise.
func (tx *Tx) ExpireCall(id string, awaiting bool, o Outcome, now time.Time) (bool, error) {
	q := qExpireSent
	if awaiting {
		q = qExpireAwaiting
	}
	return tx.finishWhere(id, q, o.finishArgs(now, id, ms(now))...)
}

// finishWhere runs one of the conditional ending statements and, when it
// ended the call, records what FinishCall records.
func (tx *Tx) finishWhere(id, q string, args ...any) (bool, error) {
	res, err := tx.exec(q, args...)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		tx.changes.ended = append(tx.changes.ended, id)
		tx.dropRow(id)
		tx.note(ChangeCall, id)
	}
	return n > 0, nil
}

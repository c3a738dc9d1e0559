package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// openCallOfC is openCall for a table named c.
const openCallOfC = `(c.status = 'pending' OR c.status = 'delivered' OR c.status = 'awaiting_approval')`

var (
	qBumpSession = query(`UPDATE sessions SET version = version + 1, changed_at = ? WHERE id = ? AND closed_at IS NULL RETURNING version`)
	qCountTools  = query(`SELECT COUNT(*) FROM tools WHERE session_id = ?`)
	qAdmission   = query(`SELECT CASE WHEN s.closed_at IS NULL THEN 1 ELSE 0 END AS open,
		CASE WHEN EXISTS (SELECT 1 FROM tools t WHERE t.session_id = s.id AND t.name = ?) THEN 1 ELSE 0 END AS registered,
		(SELECT COUNT(*) FROM calls c WHERE c.session_id = s.id AND ` + openCallOfC + `) AS open_calls
		FROM sessions s WHERE s.id = ?`)
	qSessionsChanged = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE changed_at >= ?`)
	qSessionsSeen    = query(`SELECT id, last_seen_at FROM sessions WHERE last_seen_at >= ? AND closed_at IS NULL`)
)

// BumpSession counts a change of an open session's row or tools (version
// and changed_at) and returns its new version; 0 when the session is not
// open. On PostgreSQL the update locks the session's row until commit, so
// the changes of one session made on several nodes take turns: call it
// first in an operation that changes a session's tools or settings.
func (tx *Tx) BumpSession(id string, now time.Time) (int64, error) {
	var version int64
	err := tx.get(&version, qBumpSession, ms(now), id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err == nil {
		tx.note(ChangeSession, id)
	}
	return version, err
}

// CountTools counts a session's registered tools inside the transaction.
func (tx *Tx) CountTools(sessionID string) (int, error) {
	var n int
	err := tx.get(&n, qCountTools, sessionID)
	return n, err
}

// Admission is what the tables say, inside the transaction that would
// store a call, of the call's session and tool.
type Admission struct {
	Exists     bool // the session exists
	Open       bool // and is open
	Registered bool // and has the tool
	OpenCalls  int  // its calls not yet ended
}

// AdmitCall reads a session's Admission for a call of tool: what a node
// that may have missed a change through another node checks in the
// transaction that stores the call, and the count its bound on open calls
// holds. On PostgreSQL it first takes a transaction-scoped advisory lock
// of the session (held until commit), so that two nodes' checks and
// inserts for one session take turns; the read that follows sees every
// call committed before the lock was granted.
func (tx *Tx) AdmitCall(sessionID, tool string) (Admission, error) {
	if tx.pg != nil {
		if _, err := tx.exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 1))`, "open/"+sessionID); err != nil {
			return Admission{}, err
		}
	}
	var row struct {
		Open       int `db:"open"`
		Registered int `db:"registered"`
		OpenCalls  int `db:"open_calls"`
	}
	err := tx.get(&row, qAdmission, tool, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return Admission{}, nil
	}
	return Admission{Exists: err == nil, Open: row.Open == 1, Registered: row.Registered == 1, OpenCalls: row.OpenCalls}, err
}

// SessionsChangedSince reads the sessions changed (created, closed, their
// tools or settings) at or after since: what a node reads again after it
// may have missed notifications.
func (s *Store) SessionsChangedSince(ctx context.Context, since time.Time) ([]SessionRow, error) {
	var rows []SessionRow
	err := s.read.sel(ctx, &rows, qSessionsChanged, ms(since))
	return rows, err
}

// SessionSeen is when an open session was last seen.
type SessionSeen struct {
	ID         string `db:"id"`
	LastSeenAt int64  `db:"last_seen_at"`
}

// SessionsSeenSince lists the open sessions seen at or after since (their
// streams or polls are held by some node): how a node learns that a
// session another node serves is still reachable.
func (s *Store) SessionsSeenSince(ctx context.Context, since time.Time) ([]SessionSeen, error) {
	var rows []SessionSeen
	err := s.read.sel(ctx, &rows, qSessionsSeen, ms(since))
	return rows, err
}

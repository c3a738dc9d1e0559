package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

var (
	qBumpSession = query(`UPDATE sessions SET version = version + 1, changed_at = ? WHERE id = ? AND closed_at IS NULL RETURNING version`)
	qCountTools  = query(`SELECT COUNT(*) FROM tools WHERE session_id = ?`)
	qToolState   = query(`SELECT CASE WHEN s.closed_at IS NULL THEN 1 ELSE 0 END AS open,
		CASE WHEN EXISTS (SELECT 1 FROM tools t WHERE t.session_id = s.id AND t.name = ?) THEN 1 ELSE 0 END AS registered
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

// SessionToolState reads, inside the transaction, whether a session is
// open and has a tool of that name: what a node that may have missed a
// change checks in the transaction that stores a call. exists is false
// when there is no such session.
func (tx *Tx) SessionToolState(sessionID, tool string) (exists, open, registered bool, err error) {
	var state struct {
		Open       int `db:"open"`
		Registered int `db:"registered"`
	}
	err = tx.get(&state, qToolState, tool, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, false, nil
	}
	return err == nil, state.Open == 1, state.Registered == 1, err
}

// SessionsChangedSince reads the sessions changed (created, closed, their
// tools or settings) at or after since: what a node reads again after it
// may have missed notifications.
func (s *Store) SessionsChangedSince(ctx context.Context, since time.Time) ([]SessionRow, error) {
	var rows []SessionRow
	err := s.sel(ctx, &rows, qSessionsChanged, ms(since))
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
	err := s.sel(ctx, &rows, qSessionsSeen, ms(since))
	return rows, err
}

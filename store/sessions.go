package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/toolgate/toolgate"
)

// SessionRow is a session as stored.
type SessionRow struct {
	ID            string        `db:"id"`
	TokenHash     string        `db:"token_hash"`
	ClientName    string        `db:"client_name"`
	ClientVersion string        `db:"client_version"`
	Platform      string        `db:"platform"`
	Metadata      string        `db:"metadata"`
	AutoApprove   bool          `db:"auto_approve"`
	CreatedAt     int64         `db:"created_at"`
	LastSeenAt    int64         `db:"last_seen_at"`
	ClosedAt      sql.NullInt64 `db:"closed_at"`
	CloseReason   string        `db:"close_reason"`
	// Version counts the changes of the session's row and tools, bumped
	// with ChangedAt (Unix ms) by each: a node holding a copy applies a
	// read only when it is not older (BumpSession).
	Version   int64 `db:"version"`
	ChangedAt int64 `db:"changed_at"`
}

// Closed reports whether the session was closed or expired.
func (r *SessionRow) Closed() bool { return r.ClosedAt.Valid }

// Session converts the row to its wire form.
func (r *SessionRow) Session() toolgate.Session {
	s := toolgate.Session{
		ID:          r.ID,
		Client:      toolgate.ClientInfo{Name: r.ClientName, Version: r.ClientVersion, Platform: r.Platform},
		AutoApprove: r.AutoApprove,
		CreatedAt:   toolgate.NewTime(fromMS(r.CreatedAt)),
		LastSeenAt:  toolgate.NewTime(fromMS(r.LastSeenAt)),
		ClosedAt:    toolgate.TimePtr(fromNullMS(r.ClosedAt)),
		CloseReason: r.CloseReason,
	}
	if r.Metadata != "" && r.Metadata != "{}" {
		s.Metadata = []byte(r.Metadata)
	}
	return s
}

const sessionColumns = `id, token_hash, client_name, client_version, platform, metadata, auto_approve, created_at, last_seen_at, closed_at, close_reason, version, changed_at`

var (
	// With :name arguments, prepared at first use (see namedExec).
	qInsertSession = `INSERT INTO sessions (` + sessionColumns + `) VALUES
		(:id, :token_hash, :client_name, :client_version, :platform, :metadata, :auto_approve, :created_at, :last_seen_at, :closed_at, :close_reason, :version, :changed_at)`
	qTouchSession   = query(`UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?`)
	qSetAutoApprove = query(`UPDATE sessions SET auto_approve = ? WHERE id = ?`)
	qCloseSession   = query(`UPDATE sessions SET closed_at = ?, close_reason = ?, last_seen_at = CASE WHEN last_seen_at < ? THEN ? ELSE last_seen_at END,
		version = version + 1, changed_at = ? WHERE id = ? AND closed_at IS NULL`)
	qDeleteToolsOf  = query(`DELETE FROM tools WHERE session_id = ?`)
	qGetSession     = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`)
	qOpenSessions   = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE closed_at IS NULL`)
	qSessionByToken = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE token_hash = ?`)

	// A page of open sessions, newest first: a range of the partial index
	// sessions_open (migration 0006), whose condition the WHERE clause
	// repeats. The first page has no cursor.
	qOpenSessionsFirstPage = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE closed_at IS NULL ORDER BY id DESC LIMIT ?`)
	qOpenSessionsPage      = query(`SELECT ` + sessionColumns + ` FROM sessions WHERE closed_at IS NULL AND id < ? ORDER BY id DESC LIMIT ?`)
)

// InsertSession stores a new session.
func (tx *Tx) InsertSession(r *SessionRow) error {
	if r.Version == 0 {
		r.Version, r.ChangedAt = 1, r.CreatedAt
	}
	_, err := tx.namedExec(qInsertSession, r)
	if err == nil {
		tx.changes.sessions = append(tx.changes.sessions, r.ID)
		tx.note(ChangeSession, r.ID)
	}
	return err
}

// TouchSession records when a session was last seen.
func (tx *Tx) TouchSession(id string, seen time.Time) error {
	_, err := tx.exec(qTouchSession, ms(seen), id, ms(seen))
	return err
}

// SetAutoApprove changes a session's auto-approve setting.
func (tx *Tx) SetAutoApprove(id string, on bool) error {
	_, err := tx.exec(qSetAutoApprove, on, id)
	tx.note(ChangeSession, id)
	return err
}

// CloseSession marks an open session closed (reason "closed" or "expired")
// and removes its tools; its calls and events stay as history. It reports
// false when the session was already closed.
func (tx *Tx) CloseSession(id, reason string, now time.Time) (bool, error) {
	res, err := tx.exec(qCloseSession, ms(now), reason, ms(now), ms(now), ms(now), id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err = tx.exec(qDeleteToolsOf, id)
	tx.changes.closed = append(tx.changes.closed, id)
	tx.note(ChangeSession, id)
	return true, err
}

// GetSession reads one session inside the transaction; nil when there is
// none with that id.
func (tx *Tx) GetSession(id string) (*SessionRow, error) {
	var r SessionRow
	return rowOrNil(&r, tx.get(&r, qGetSession, id))
}

// GetSession reads one session; nil when there is none with that id.
func (s *Store) GetSession(ctx context.Context, id string) (*SessionRow, error) {
	var r SessionRow
	return rowOrNil(&r, s.read.get(ctx, &r, qGetSession, id))
}

// OpenSessions lists every session that is neither closed nor expired.
func (s *Store) OpenSessions(ctx context.Context) ([]SessionRow, error) {
	var rows []SessionRow
	err := s.read.sel(ctx, &rows, qOpenSessions)
	return rows, err
}

// OpenSessionsPage lists up to limit open sessions, newest first (ids are
// UUIDv7, in creation order), those with an id below before when it is
// set: the id of the last session of the previous page is the next page's
// cursor.
func (s *Store) OpenSessionsPage(ctx context.Context, before string, limit int) ([]SessionRow, error) {
	var rows []SessionRow
	var err error
	if before == "" {
		err = s.read.sel(ctx, &rows, qOpenSessionsFirstPage, limit)
	} else {
		err = s.read.sel(ctx, &rows, qOpenSessionsPage, before, limit)
	}
	return rows, err
}

// FindSessionByTokenHash returns the session whose token has the hash, or nil.
func (s *Store) FindSessionByTokenHash(ctx context.Context, hash string) (*SessionRow, error) {
	var r SessionRow
	return rowOrNil(&r, s.read.get(ctx, &r, qSessionByToken, hash))
}

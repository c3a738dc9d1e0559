package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
)

var (
	qAppendEvent = query(`INSERT INTO events (session_id, type, call_id, data, created_at) VALUES (?, ?, ?, ?, ?)`)
	// On PostgreSQL the session's counter is bumped in the inserting
	// statement: the session's row stays locked until commit, so a
	// session's events commit in cursor order whatever node appends them
	// (a sequence shared by all sessions hands out numbers that can commit
	// out of order, and a reader past the larger one would skip the
	// smaller). No row when the session does not exist.
	qAppendEventCounted = `WITH bumped AS (UPDATE sessions SET event_seq = event_seq + 1 WHERE id = ? RETURNING event_seq)
		INSERT INTO events (session_id, seq, type, call_id, data, created_at)
		SELECT ?::text, event_seq, ?::text, ?::text, ?::text, ?::bigint FROM bumped RETURNING seq`
	qEventsAfter = query(`SELECT e.seq, e.type, COALESCE(e.call_id, ''), e.data, COALESCE(c.status, '')
		FROM events e LEFT JOIN calls c ON c.id = e.call_id
		WHERE e.session_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`)
	qLastEventSeq = query(`SELECT MAX(seq) FROM events WHERE session_id = ?`)
	// From the session's requests to their calls, not the other way: the
	// events table has no index on call_id, and going from calls to events
	// scanned it once per open call, which made recovering many open calls
	// slow (BENCHMARKS.md, "Figures behind design choices in the code").
	qOpenRequests = query(`SELECT e.seq, c.id, c.tool, c.args, c.deadline, c.attempts
		FROM events e JOIN calls c ON c.id = e.call_id
		WHERE e.session_id = ? AND e.type = 'tool_call_request'
		  AND c.status IN ('pending', 'delivered') AND c.deadline > ?
		ORDER BY e.seq`)
	qPruneEvents = query(`DELETE FROM events WHERE created_at < ? AND NOT (
		type = 'tool_call_request' AND call_id IN (SELECT id FROM calls WHERE ` + openCall + `))`)
)

// AppendEvent adds an event to a session's log and returns its cursor.
func (tx *Tx) AppendEvent(sessionID, typ, callID string, data []byte, now time.Time) (int64, error) {
	if tx.pg != nil {
		var seq int64
		err := tx.get(&seq, qAppendEventCounted, sessionID,
			sessionID, typ, sql.NullString{String: callID, Valid: callID != ""}, string(data), ms(now))
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("store: append an event to session %q: no such session", sessionID)
		}
		if err == nil {
			tx.note(ChangeEvents, sessionID)
		}
		return seq, err
	}
	res, err := tx.exec(qAppendEvent,
		sessionID, typ, sql.NullString{String: callID, Valid: callID != ""}, string(data), ms(now))
	if err != nil {
		return 0, err
	}
	seq, err := res.LastInsertId()
	if err == nil {
		tx.changes.events = append(tx.changes.events, tailEvent{
			Event: toolgate.Event{Seq: seq, Type: typ, CallID: callID, Data: data}, session: sessionID,
		})
	}
	return seq, err
}

// EventsAfter returns events of a session after the cursor, in order,
// looking at up to limit of them and leaving out requests for calls that
// have ended (a client that reconnects must not run them). last is the
// cursor of the last event looked at, returned or left out, so a reader
// moves past both; full reports that limit events were looked at, so more
// may follow.
func (s *Store) EventsAfter(ctx context.Context, sessionID string, cursor int64, limit int) (events []toolgate.Event, last int64, full bool, err error) {
	if events, last, ok := s.tail.after(sessionID, cursor); ok {
		return events, last, false, nil
	}
	rows, err := s.read.rows(ctx, qEventsAfter, sessionID, cursor, limit)
	if err != nil {
		return nil, cursor, false, err
	}
	defer rows.Close()
	last = cursor
	n := 0
	for rows.Next() {
		n++
		var ev toolgate.Event
		var data, status string
		if err := rows.Scan(&ev.Seq, &ev.Type, &ev.CallID, &data, &status); err != nil {
			return nil, cursor, false, s.read.failed(ctx, err)
		}
		last = ev.Seq
		if ev.Type == toolgate.EventToolCallRequest && toolgate.CallStatus(status).Final() {
			continue
		}
		ev.Data = []byte(data)
		events = append(events, ev)
	}
	// A connection lost while the rows arrive is told as such too.
	return events, last, n == limit, s.read.failed(ctx, rows.Err())
}

// LastEventSeq returns the cursor of a session's newest event, 0 when none.
func (s *Store) LastEventSeq(ctx context.Context, sessionID string) (int64, error) {
	if seq, ok := s.tail.lastSeq(sessionID); ok {
		return seq, nil
	}
	var seq sql.NullInt64
	err := s.read.get(ctx, &seq, qLastEventSeq, sessionID)
	return seq.Int64, err
}

// OpenRequest is an open call of a session with the cursor of its request
// event, for sending open calls to a client that connects without a cursor.
type OpenRequest struct {
	Seq      int64  `db:"seq"`
	ID       string `db:"id"`
	Tool     string `db:"tool"`
	Args     string `db:"args"`
	Deadline int64  `db:"deadline"`
	Attempts int    `db:"attempts"`
}

// DeadlineTime returns the deadline as a time.
func (r OpenRequest) DeadlineTime() time.Time { return fromMS(r.Deadline) }

// OpenRequests lists the session's calls that were sent or are to be sent
// and have neither ended nor passed their deadline, oldest first, with the
// newest event cursor of the session, read in one snapshot.
func (s *Store) OpenRequests(ctx context.Context, sessionID string, now time.Time) (reqs []OpenRequest, lastSeq int64, err error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg != nil {
		// READ COMMITTED takes a snapshot per statement.
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.read.db.BeginTxx(ctx, opts)
	if err != nil {
		return nil, 0, s.read.failed(ctx, err)
	}
	defer tx.Rollback()
	err = tx.SelectContext(ctx, &reqs, s.read.bind(qOpenRequests), sessionID, ms(now))
	if err != nil {
		return nil, 0, s.read.failed(ctx, err)
	}
	var seq sql.NullInt64
	if err := tx.GetContext(ctx, &seq, s.read.bind(qLastEventSeq), sessionID); err != nil {
		return nil, 0, s.read.failed(ctx, err)
	}
	return reqs, seq.Int64, nil
}

// PruneEvents deletes events older than before, keeping every request for a
// call still open, so the log does not grow without bound. It returns how
// many it deleted.
func (tx *Tx) PruneEvents(before time.Time) (int64, error) {
	res, err := tx.exec(qPruneEvents, ms(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

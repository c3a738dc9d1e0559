package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// MCP sessions of the protocol revisions before 2026-07-28 (tables
// mcp_sessions, mcp_streams, mcp_events, mcp_inflight; migrations 0012 /
// postgres 0005): kept here so that a session id stays valid after a
// restart and on every node, its SSE streams can be resumed with
// Last-Event-ID, and the result of a tools/call whose handler died with
// its process still reaches the host. The endpoint (package mcpserve)
// uses them through MCPSessions.
const (
	// MaxMCPStreamEvents is the most events kept of one stream: older ones
	// are dropped, and resuming before them fails (the SDK answers 400).
	MaxMCPStreamEvents = 1000
	// MaxMCPSessionStreams is the most streams kept of one session: the
	// oldest goes, with its events, when a new one opens past it.
	MaxMCPSessionStreams = 100
)

// ErrMCPEventsDropped is EventsAfter's error when events after the index
// asked for are no longer kept (or the stream is unknown).
var ErrMCPEventsDropped = errors.New("store: the events asked for are no longer kept")

// MCPSessions reads and writes the durable MCP sessions.
type MCPSessions struct{ s *Store }

// MCPSessions returns the store's MCP sessions.
func (s *Store) MCPSessions() *MCPSessions { return &MCPSessions{s} }

type mcpSessionRow struct {
	Route  string `db:"route"`
	State  string `db:"state"`
	UsedAt int64  `db:"used_at"`
}

var (
	qMCPSessionGet   = query(`SELECT route, state, used_at FROM mcp_sessions WHERE id = ?`)
	qMCPSessionCount = query(`SELECT COUNT(*) FROM mcp_sessions WHERE credential = ? AND used_at >= ?`)
	qMCPSessionPut   = query(`INSERT INTO mcp_sessions (id, route, credential, state, created_at, used_at) VALUES (?, ?, ?, ?, ?, ?)`)
	qMCPSessionTouch = query(`UPDATE mcp_sessions SET used_at = ? WHERE id = ? AND used_at < ?`)
	qMCPStreamNext   = query(`SELECT next_idx FROM mcp_streams WHERE session_id = ? AND stream_id = ?`)
	qMCPEventsAfter  = query(`SELECT idx, data FROM mcp_events WHERE session_id = ? AND stream_id = ? AND idx > ? ORDER BY idx`)
	qMCPEventFirst   = query(`SELECT COALESCE(MIN(idx), -1) FROM mcp_events WHERE session_id = ? AND stream_id = ?`)
	qMCPInflight     = query(`SELECT request_id, call_id FROM mcp_inflight WHERE session_id = ? AND stream_id = ? ORDER BY created_at, request_id`)
)

// Create stores a new session of credential, unless maxAlive of its
// sessions are alive (used within idle of now): then it reports false
// and stores nothing. The credential's sessions idle longer are deleted
// first.
func (m *MCPSessions) Create(ctx context.Context, id, route, credential string, state []byte, now time.Time, maxAlive int, idle time.Duration) (bool, error) {
	return WriteValue(ctx, m.s, func(tx *Tx) (bool, error) {
		if tx.pg != nil {
			// Other nodes create too: one at a time per credential, so
			// that two cannot both take the last place.
			if _, err := tx.exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "mcp_sessions/"+credential); err != nil {
				return false, err
			}
		}
		cutoff := ms(now.Add(-idle))
		if err := deleteMCPSessions(tx, `SELECT id FROM mcp_sessions WHERE credential = ? AND used_at < ?`, credential, cutoff); err != nil {
			return false, err
		}
		var alive int
		if err := tx.get(&alive, qMCPSessionCount, credential, cutoff); err != nil {
			return false, err
		}
		if alive >= maxAlive {
			return false, nil
		}
		_, err := tx.exec(qMCPSessionPut, id, route, credential, string(state), ms(now), ms(now))
		return err == nil, err
	})
}

// Lookup returns the route and state of session id, and when it was last
// marked used, if it is alive (used within idle of now).
func (m *MCPSessions) Lookup(ctx context.Context, id string, now time.Time, idle time.Duration) (route string, state []byte, used time.Time, found bool, err error) {
	var r mcpSessionRow
	row, err := rowOrNil(&r, m.s.read.get(ctx, &r, qMCPSessionGet, id))
	if err != nil || row == nil || r.UsedAt < ms(now.Add(-idle)) {
		return "", nil, time.Time{}, false, err
	}
	return r.Route, []byte(r.State), fromMS(r.UsedAt), true, nil
}

// Touch marks session id used at now.
func (m *MCPSessions) Touch(ctx context.Context, id string, now time.Time) error {
	return m.s.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec(qMCPSessionTouch, ms(now), id, ms(now))
		return err
	})
}

// End deletes session id with its streams, events and calls in flight;
// false when there was none.
func (m *MCPSessions) End(ctx context.Context, id string) (bool, error) {
	return WriteValue(ctx, m.s, func(tx *Tx) (bool, error) {
		res, err := tx.exec(`DELETE FROM mcp_sessions WHERE id = ?`, id)
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		return n > 0, deleteMCPSessionParts(tx, id)
	})
}

// PruneIdle deletes up to limit sessions not used since before, with
// their parts, and returns how many went.
func (m *MCPSessions) PruneIdle(ctx context.Context, before time.Time, limit int) (int, error) {
	return WriteValue(ctx, m.s, func(tx *Tx) (int, error) {
		var ids []string
		if err := tx.sel(&ids, `SELECT id FROM mcp_sessions WHERE used_at < ? ORDER BY used_at LIMIT ?`, ms(before), limit); err != nil {
			return 0, err
		}
		for _, id := range ids {
			if _, err := tx.exec(`DELETE FROM mcp_sessions WHERE id = ?`, id); err != nil {
				return 0, err
			}
			if err := deleteMCPSessionParts(tx, id); err != nil {
				return 0, err
			}
		}
		return len(ids), nil
	})
}

// deleteMCPSessions deletes the sessions the query selects (by id), with
// their parts.
func deleteMCPSessions(tx *Tx, q string, args ...any) error {
	var ids []string
	if err := tx.sel(&ids, q, args...); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.exec(`DELETE FROM mcp_sessions WHERE id = ?`, id); err != nil {
			return err
		}
		if err := deleteMCPSessionParts(tx, id); err != nil {
			return err
		}
	}
	return nil
}

// deleteMCPSessionParts deletes a session's streams, events and calls in
// flight.
func deleteMCPSessionParts(tx *Tx, id string) error {
	for _, q := range []string{
		`DELETE FROM mcp_streams WHERE session_id = ?`,
		`DELETE FROM mcp_events WHERE session_id = ?`,
		`DELETE FROM mcp_inflight WHERE session_id = ?`,
	} {
		if _, err := tx.exec(q, id); err != nil {
			return err
		}
	}
	return nil
}

// OpenStream starts stream of session sid afresh (its next event is index
// 0; events kept of an earlier stream of that id go), and drops the
// session's oldest stream when it holds MaxMCPSessionStreams.
func (m *MCPSessions) OpenStream(ctx context.Context, sid, stream string, now time.Time) error {
	return m.s.Write(ctx, func(tx *Tx) error { return openMCPStream(tx, sid, stream, now) })
}

func openMCPStream(tx *Tx, sid, stream string, now time.Time) error {
	if err := dropMCPStream(tx, sid, stream); err != nil {
		return err
	}
	var streams int
	if err := tx.get(&streams, `SELECT COUNT(*) FROM mcp_streams WHERE session_id = ?`, sid); err != nil {
		return err
	}
	var oldest []string
	if over := streams - MaxMCPSessionStreams + 1; over > 0 {
		if err := tx.sel(&oldest, `SELECT stream_id FROM mcp_streams WHERE session_id = ? ORDER BY opened_at, stream_id LIMIT ?`, sid, over); err != nil {
			return err
		}
	}
	for _, old := range oldest {
		if err := dropMCPStream(tx, sid, old); err != nil {
			return err
		}
	}
	_, err := tx.exec(`INSERT INTO mcp_streams (session_id, stream_id, next_idx, opened_at) VALUES (?, ?, 0, ?)`, sid, stream, ms(now))
	return err
}

func dropMCPStream(tx *Tx, sid, stream string) error {
	if _, err := tx.exec(`DELETE FROM mcp_streams WHERE session_id = ? AND stream_id = ?`, sid, stream); err != nil {
		return err
	}
	_, err := tx.exec(`DELETE FROM mcp_events WHERE session_id = ? AND stream_id = ?`, sid, stream)
	return err
}

// AppendEvent stores data as the next event of stream (opened first, as
// OpenStream does, if it was not), dropping the stream's oldest past
// MaxMCPStreamEvents.
// answers, when not "", is the JSON-RPC id data answers: that request is
// no longer in flight.
func (m *MCPSessions) AppendEvent(ctx context.Context, sid, stream string, data []byte, answers string) error {
	return m.s.Write(ctx, func(tx *Tx) error {
		return appendMCPEvent(tx, sid, stream, data, answers, m.s.Now())
	})
}

func appendMCPEvent(tx *Tx, sid, stream string, data []byte, answers string, now time.Time) error {
	var next int64
	if err := tx.get(&next, qMCPStreamNext, sid, stream); err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := openMCPStream(tx, sid, stream, now); err != nil {
			return err
		}
	}
	if _, err := tx.exec(`INSERT INTO mcp_events (session_id, stream_id, idx, data) VALUES (?, ?, ?, ?)`, sid, stream, next, string(data)); err != nil {
		return err
	}
	if _, err := tx.exec(`UPDATE mcp_streams SET next_idx = ? WHERE session_id = ? AND stream_id = ?`, next+1, sid, stream); err != nil {
		return err
	}
	if _, err := tx.exec(`DELETE FROM mcp_events WHERE session_id = ? AND stream_id = ? AND idx <= ?`, sid, stream, next-MaxMCPStreamEvents); err != nil {
		return err
	}
	if answers != "" {
		if _, err := tx.exec(`DELETE FROM mcp_inflight WHERE session_id = ? AND request_id = ?`, sid, answers); err != nil {
			return err
		}
	}
	return nil
}

// EventsAfter returns the events of stream after index idx (-1: all), in
// order; ErrMCPEventsDropped when the stream is unknown or some of them
// are no longer kept.
func (m *MCPSessions) EventsAfter(ctx context.Context, sid, stream string, idx int) ([][]byte, error) {
	var next int64
	if err := m.s.read.get(ctx, &next, qMCPStreamNext, sid, stream); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrMCPEventsDropped
		}
		return nil, err
	}
	var first int64
	if err := m.s.read.get(ctx, &first, qMCPEventFirst, sid, stream); err != nil {
		return nil, err
	}
	if int64(idx)+1 < next && (first < 0 || first > int64(idx)+1) {
		return nil, ErrMCPEventsDropped
	}
	var rows []struct {
		Idx  int64  `db:"idx"`
		Data string `db:"data"`
	}
	if err := m.s.read.sel(ctx, &rows, qMCPEventsAfter, sid, stream, idx); err != nil {
		return nil, err
	}
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r.Data)
	}
	return out, nil
}

// PutInflight records that request (a JSON-RPC id) of session sid, sent
// on stream, waits for toolgate call callID (a record of the same request
// is replaced).
func (m *MCPSessions) PutInflight(ctx context.Context, sid, request, stream, callID string, now time.Time) error {
	return m.s.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec(`INSERT INTO mcp_inflight (session_id, request_id, stream_id, call_id, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session_id, request_id) DO UPDATE SET stream_id = excluded.stream_id, call_id = excluded.call_id`,
			sid, request, stream, callID, ms(now))
		return err
	})
}

// Inflight returns the requests of stream still in flight, with the calls
// they wait for.
func (m *MCPSessions) Inflight(ctx context.Context, sid, stream string) (requests, calls []string, err error) {
	var rows []struct {
		Request string `db:"request_id"`
		Call    string `db:"call_id"`
	}
	if err := m.s.read.sel(ctx, &rows, qMCPInflight, sid, stream); err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		requests = append(requests, r.Request)
		calls = append(calls, r.Call)
	}
	return requests, calls, nil
}

// Deliver appends data (request's response) to stream if request is still
// in flight, and ends that; false when it was not (it was answered
// already, here or by another node).
func (m *MCPSessions) Deliver(ctx context.Context, sid, request, stream string, data []byte) (bool, error) {
	return WriteValue(ctx, m.s, func(tx *Tx) (bool, error) {
		res, err := tx.exec(`DELETE FROM mcp_inflight WHERE session_id = ? AND request_id = ?`, sid, request)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, nil
		}
		return true, appendMCPEvent(tx, sid, stream, data, "", m.s.Now())
	})
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
)

// CallRow is a call as stored.
type CallRow struct {
	ID             string         `db:"id"`
	SessionID      sql.NullString `db:"session_id"`
	Tool           string         `db:"tool"`
	Args           string         `db:"args"`
	Status         string         `db:"status"`
	Output         sql.NullString `db:"output"`
	ErrorCode      sql.NullString `db:"error_code"`
	ErrorMessage   sql.NullString `db:"error_message"`
	ErrorDetails   sql.NullString `db:"error_details"`
	Progress       sql.NullString `db:"progress"`
	TimeoutMS      int64          `db:"timeout_ms"`
	CreatedAt      int64          `db:"created_at"`
	DeliveredAt    sql.NullInt64  `db:"delivered_at"`
	CompletedAt    sql.NullInt64  `db:"completed_at"`
	Deadline       int64          `db:"deadline"`
	Attempts       int            `db:"attempts"`
	IdempotencyKey sql.NullString `db:"idempotency_key"`
	RunID          sql.NullString `db:"run_id"`
	// EstimatedCost is the tool's estimate when the call was made; Cost
	// what its answer reported. NULL when there was none.
	EstimatedCost sql.NullFloat64 `db:"estimated_cost"`
	Cost          sql.NullFloat64 `db:"cost"`
	// RateLimited marks a call of a tool with a rate limit, which the
	// limit's count reads back (only written, never read into a row).
	RateLimited bool `db:"-"`
}

// Call converts the row to the caller API's call record.
func (r *CallRow) Call() *toolgate.Call {
	c := &toolgate.Call{
		ID:          r.ID,
		SessionID:   r.SessionID.String,
		Tool:        r.Tool,
		Args:        []byte(r.Args),
		Status:      toolgate.CallStatus(r.Status),
		CreatedAt:   toolgate.NewTime(fromMS(r.CreatedAt)),
		DeliveredAt: toolgate.TimePtr(fromNullMS(r.DeliveredAt)),
		CompletedAt: toolgate.TimePtr(fromNullMS(r.CompletedAt)),
		Deadline:    toolgate.NewTime(fromMS(r.Deadline)),
		Attempts:    r.Attempts,
		RunID:       r.RunID.String,
	}
	if r.EstimatedCost.Valid {
		v := r.EstimatedCost.Float64
		c.EstimatedCost = &v
	}
	if r.Cost.Valid {
		v := r.Cost.Float64
		c.Cost = &v
	}
	if r.Output.Valid {
		c.Output = []byte(r.Output.String)
	}
	if r.Progress.Valid {
		c.Progress = []byte(r.Progress.String)
	}
	if r.ErrorCode.Valid {
		c.Error = &toolgate.CallError{Code: r.ErrorCode.String, Message: r.ErrorMessage.String}
		if r.ErrorDetails.Valid {
			c.Error.Details = []byte(r.ErrorDetails.String)
		}
	}
	if r.CompletedAt.Valid {
		d := r.CompletedAt.Int64 - r.CreatedAt
		c.DurationMS = &d
	}
	return c
}

// DeadlineTime returns the call's deadline.
func (r *CallRow) DeadlineTime() time.Time { return fromMS(r.Deadline) }

// CreatedTime returns when the call was created.
func (r *CallRow) CreatedTime() time.Time { return fromMS(r.CreatedAt) }

const callColumns = `id, session_id, tool, args, status, output, error_code, error_message, error_details, progress,
	timeout_ms, created_at, delivered_at, completed_at, deadline, attempts, idempotency_key, run_id, estimated_cost, cost`

// openCall is the SQL condition of a call that has not ended. It is
// written exactly as the WHERE clause of the partial index calls_open
// (migration 0005), which a query can use only when it says the same; and
// as equalities, not "status IN (...)", which SQLite codes by building a
// temporary B-tree of the values on every execution.
const openCall = `(status = 'pending' OR status = 'delivered' OR status = 'awaiting_approval')`

// NewCallRow builds the stored form of a new call.
func NewCallRow(id, sessionID, tool string, args []byte, status toolgate.CallStatus, timeout time.Duration, now time.Time) CallRow {
	return CallRow{
		ID:        id,
		SessionID: sql.NullString{String: sessionID, Valid: sessionID != ""},
		Tool:      tool,
		Args:      string(args),
		Status:    string(status),
		TimeoutMS: timeout.Milliseconds(),
		CreatedAt: ms(now),
		Deadline:  ms(now.Add(timeout)),
	}
}

// SetIdempotencyKey records the caller's Idempotency-Key on a new call.
func (r *CallRow) SetIdempotencyKey(key string) {
	r.IdempotencyKey = sql.NullString{String: key, Valid: key != ""}
}

// SetRunID records the agent run a new call belongs to.
func (r *CallRow) SetRunID(id string) { r.RunID = sql.NullString{String: id, Valid: id != ""} }

// SetEstimatedCost records the tool's estimate of what a new call costs;
// zero (no estimate) is stored as NULL.
func (r *CallRow) SetEstimatedCost(v float64) {
	r.EstimatedCost = sql.NullFloat64{Float64: v, Valid: v > 0}
}

var (
	qInsertCall     = query(`INSERT INTO calls (` + callColumns + `, rate_limited, node) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	qGetCall        = query(`SELECT ` + callColumns + ` FROM calls WHERE id = ?`)
	qCallByIdemKey  = query(`SELECT ` + callColumns + ` FROM calls WHERE idempotency_key = ? AND idempotency_key IS NOT NULL`)
	qFinishCall     = query(`UPDATE calls SET ` + finishColumns + ` WHERE id = ? AND ` + openCall)
	qFinishAnswered = query(`UPDATE calls SET ` + finishColumns + `,
		delivered_at = COALESCE(delivered_at, ?), attempts = attempts + ?
		WHERE id = ? AND session_id = ? AND status IN ('pending', 'delivered') RETURNING ` + callColumns)
	// The same without reading the row back, for a call whose row is known.
	qFinishAnsweredKnown = query(`UPDATE calls SET ` + finishColumns + `,
		delivered_at = COALESCE(delivered_at, ?), attempts = attempts + ?
		WHERE id = ? AND session_id = ? AND status IN ('pending', 'delivered')`)
	qMarkDelivered = query(`UPDATE calls SET status = CASE WHEN status = 'pending' THEN 'delivered' ELSE status END, delivered_at = COALESCE(delivered_at, ?), attempts = attempts + ? WHERE id = ? AND status IN ('pending', 'delivered')`)
	qSetProgress   = query(`UPDATE calls SET progress = ?, deadline = ? WHERE id = ? AND ` + openCall)
	qOpenCallsOf   = query(`SELECT ` + callColumns + ` FROM calls WHERE session_id = ? AND ` + openCall + ` ORDER BY id`)
	qOpenDeadlines = query(`SELECT id, session_id, deadline FROM calls WHERE ` + openCall + ` ORDER BY deadline`)
	qOverdueCalls  = query(`SELECT id FROM calls WHERE ` + openCall + ` AND deadline <= ? ORDER BY deadline LIMIT ?`)
)

// InsertCall stores a new call. When another call holds its idempotency
// key, the error is ErrDuplicateIdempotencyKey.
func (tx *Tx) InsertCall(r *CallRow) error {
	var rateLimited any // NULL keeps the call out of calls_rate_limited
	if r.RateLimited {
		rateLimited = 1
	}
	var node any // a call of a tool inside the gateway names the node running it
	if !r.SessionID.Valid {
		node = tx.node
	}
	// Positional arguments: binding by name costs reflection on every call.
	_, err := tx.exec(qInsertCall, r.ID, r.SessionID, r.Tool, r.Args, r.Status, r.Output, r.ErrorCode, r.ErrorMessage,
		r.ErrorDetails, r.Progress, r.TimeoutMS, r.CreatedAt, r.DeliveredAt, r.CompletedAt, r.Deadline, r.Attempts,
		r.IdempotencyKey, r.RunID, r.EstimatedCost, r.Cost, rateLimited, node)
	err = uniqueAs(err, ErrDuplicateIdempotencyKey) // the only UNIQUE index of calls
	// The row is kept for FinishAnswered, which only a session's client
	// calls: a built-in call (no session) ends through FinishCall.
	if err == nil && r.SessionID.Valid && tx.pg == nil {
		stored := *r
		tx.changes.rows.add(rowChange{r.ID, &stored})
	}
	return err
}

// GetCall reads a call inside the transaction; nil when there is none.
func (tx *Tx) GetCall(id string) (*CallRow, error) {
	var r CallRow
	return rowOrNil(&r, tx.get(&r, qGetCall, id))
}

// Outcome is how a call ends.
type Outcome struct {
	Status       toolgate.CallStatus
	Output       []byte // JSON, for completed
	ErrorCode    string
	ErrorMessage string
	ErrorDetails []byte // JSON object or nil
	// Cost is what the call cost as its answer reported it; nil when it
	// reported none.
	Cost *float64
}

// outcomeColumns are an outcome's stored values in the order of
// finishColumns (completed_at last, set by the caller).
type outcomeColumns struct {
	output, code, message, details, cost any
}

// columns returns the outcome's stored values: NULL where it has none, and
// the message only with a code.
func (o Outcome) columns() outcomeColumns {
	var c outcomeColumns
	if o.Output != nil {
		c.output = string(o.Output)
	}
	if o.ErrorCode != "" {
		c.code, c.message = o.ErrorCode, o.ErrorMessage
	}
	if o.ErrorDetails != nil {
		c.details = string(o.ErrorDetails)
	}
	if o.Cost != nil {
		c.cost = *o.Cost
	}
	return c
}

// finishArgs are the arguments of a finishColumns SET list: the outcome's
// status and values, then completed_at, then the statement's own.
func (o Outcome) finishArgs(now time.Time, more ...any) []any {
	c := o.columns()
	return append([]any{string(o.Status), c.output, c.code, c.message, c.details, c.cost, ms(now)}, more...)
}

// textColumn is a value from Outcome.columns as read back: NULL unless a string.
func textColumn(v any) sql.NullString {
	s, ok := v.(string)
	return sql.NullString{String: s, Valid: ok}
}

// FinishCall moves an open call to a final status. It reports false, and
// changes nothing, when the call is not open any more.
func (tx *Tx) FinishCall(id string, o Outcome, now time.Time) (bool, error) {
	return tx.finishWhere(id, qFinishCall, o.finishArgs(now, id)...)
}

// FinishAnswered ends a call of session sid that was sent and not yet
// answered with the client's outcome, in one statement, and returns the
// ended record; nil, and no change, when there is no such call (then the
// caller reads the call to say why). Deliveries not yet recorded (first,
// count) are recorded with it: an answered call was delivered. The record
// is composed from the call's open row when this process stored the call,
// and read back otherwise.
func (tx *Tx) FinishAnswered(id, sid string, o Outcome, now, first time.Time, count int) (*CallRow, error) {
	if count == 0 || first.IsZero() {
		first, count = now, 0
	}
	args := o.finishArgs(now, ms(first), count, id, sid)
	var r CallRow
	if known := tx.openRow(id); known != nil {
		res, err := tx.exec(qFinishAnsweredKnown, args...)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, nil
		}
		// What the statement did, done to the known row.
		r = *known
		r.Status = string(o.Status)
		c := o.columns()
		r.Output, r.ErrorCode, r.ErrorMessage, r.ErrorDetails = textColumn(c.output), textColumn(c.code), textColumn(c.message), textColumn(c.details)
		if o.Cost != nil {
			r.Cost = sql.NullFloat64{Float64: *o.Cost, Valid: true}
		}
		r.CompletedAt = sql.NullInt64{Int64: ms(now), Valid: true}
		r.delivered(first, count)
	} else {
		err := tx.get(&r, qFinishAnswered, args...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	tx.changes.ended = append(tx.changes.ended, id)
	tx.dropRow(id)
	tx.note(ChangeCall, id)
	return &r, nil
}

// MarkDelivered records that the calls were written to a client: pending
// becomes delivered, the first delivery time is kept, attempts count up.
func (tx *Tx) MarkDelivered(ids []string, now time.Time) error {
	for _, id := range ids {
		if err := tx.MarkDeliveredTimes(id, now, 1); err != nil {
			return err
		}
	}
	return nil
}

// delivered is, done to a known row, what the statements recording
// deliveries do in the table: the first delivery time is kept
// (COALESCE(delivered_at, ?)) and attempts count up (attempts + ?).
func (r *CallRow) delivered(first time.Time, count int) {
	if !r.DeliveredAt.Valid {
		r.DeliveredAt = sql.NullInt64{Int64: ms(first), Valid: true}
	}
	r.Attempts += count
}

// MarkDeliveredTimes records that a call was written to a client count
// times, the first at first.
func (tx *Tx) MarkDeliveredTimes(id string, first time.Time, count int) error {
	res, err := tx.exec(qMarkDelivered, ms(first), count, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		tx.changeRow(id, func(r *CallRow) {
			if r.Status == string(toolgate.StatusPending) {
				r.Status = string(toolgate.StatusDelivered)
			}
			r.delivered(first, count)
		})
	}
	return nil
}

// SetProgress stores a call's latest progress and its new deadline; false
// when the call is not open.
func (tx *Tx) SetProgress(id string, progress []byte, deadline time.Time) (bool, error) {
	res, err := tx.exec(qSetProgress, string(progress), ms(deadline), id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		tx.changeRow(id, func(r *CallRow) {
			r.Progress = sql.NullString{String: string(progress), Valid: true}
			r.Deadline = ms(deadline)
		})
		tx.note(ChangeCall, id)
	}
	return n > 0, nil
}

// OpenCallsOfSession lists a session's open calls within a transaction.
func (tx *Tx) OpenCallsOfSession(sessionID string) ([]CallRow, error) {
	var rows []CallRow
	err := tx.sel(&rows, qOpenCallsOf, sessionID)
	return rows, err
}

// GetCall reads a call; nil when there is none.
func (s *Store) GetCall(ctx context.Context, id string) (*CallRow, error) {
	if r, ok := s.finals.get(id); ok {
		return &r, nil
	}
	var r CallRow
	return rowOrNil(&r, s.read.get(ctx, &r, qGetCall, id))
}

// FindCallByIdempotencyKey returns the call created with the key, or nil.
func (s *Store) FindCallByIdempotencyKey(ctx context.Context, key string) (*CallRow, error) {
	var r CallRow
	return rowOrNil(&r, s.read.get(ctx, &r, qCallByIdemKey, key))
}

// CallFilter selects calls from the history. Zero fields do not filter.
type CallFilter struct {
	SessionID string
	Tool      string
	Status    string
	RunID     string
	Before    string // a call id: only calls created before it
	Limit     int
}

// ListCalls lists calls newest first. Call ids are UUIDv7, ordered by
// creation time, so the id is also the page cursor.
func (s *Store) ListCalls(ctx context.Context, f CallFilter) ([]CallRow, error) {
	var where []string
	var args []any
	if f.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, f.SessionID)
	}
	if f.Tool != "" {
		where, args = append(where, "tool = ?"), append(args, f.Tool)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.Before != "" {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	q := `SELECT ` + callColumns + ` FROM calls`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, f.Limit)
	var rows []CallRow
	err := s.read.sel(ctx, &rows, q, args...)
	return rows, err
}

// OverdueCalls lists up to limit open calls whose deadline has passed.
func (s *Store) OverdueCalls(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.read.sel(ctx, &ids, qOverdueCalls, ms(now), limit)
	return ids, err
}

// OpenCallDeadline is an open call's id and deadline, for the scheduler.
type OpenCallDeadline struct {
	ID        string         `db:"id"`
	SessionID sql.NullString `db:"session_id"`
	Deadline  int64          `db:"deadline"`
}

// DeadlineTime returns the deadline as a time.
func (d OpenCallDeadline) DeadlineTime() time.Time { return fromMS(d.Deadline) }

// OpenCallDeadlines lists every open call's deadline, for recovery at start-up.
func (s *Store) OpenCallDeadlines(ctx context.Context) ([]OpenCallDeadline, error) {
	var rows []OpenCallDeadline
	err := s.read.sel(ctx, &rows, qOpenDeadlines)
	return rows, err
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// RunRow is an agent run as stored.
type RunRow struct {
	ID               string         `db:"id"`
	SessionID        sql.NullString `db:"session_id"`
	StartedBySession string         `db:"started_by_session"`
	Model            string         `db:"model"`
	Status           string         `db:"status"`
	MaxSteps         int            `db:"max_steps"`
	Steps            int            `db:"steps"`
	InputMessages    int            `db:"input_messages"`
	Output           sql.NullString `db:"output"`
	ErrorCode        sql.NullString `db:"error_code"`
	ErrorMessage     sql.NullString `db:"error_message"`
	CreatedAt        int64          `db:"created_at"`
	UpdatedAt        int64          `db:"updated_at"`
	FinishedAt       sql.NullInt64  `db:"finished_at"`
	// MaxCost is the run's budget; NULL when it has none.
	MaxCost sql.NullFloat64 `db:"max_cost"`
}

// CreatedTime returns when the run was created.
func (r *RunRow) CreatedTime() time.Time { return fromMS(r.CreatedAt) }

// UpdatedTime returns when the run last changed.
func (r *RunRow) UpdatedTime() time.Time { return fromMS(r.UpdatedAt) }

// FinishedTime returns when the run ended, zero while it runs.
func (r *RunRow) FinishedTime() time.Time { return fromNullMS(r.FinishedAt) }

// NewRunRow builds the stored form of a new run.
func NewRunRow(id, sessionID, startedBy, model string, maxSteps, inputMessages int, now time.Time) RunRow {
	return RunRow{
		ID: id, SessionID: sql.NullString{String: sessionID, Valid: sessionID != ""}, StartedBySession: startedBy,
		Model: model, Status: "running", MaxSteps: maxSteps, InputMessages: inputMessages,
		CreatedAt: ms(now), UpdatedAt: ms(now),
	}
}

// SetMaxCost records a new run's budget; zero (none) is stored as NULL.
func (r *RunRow) SetMaxCost(v float64) { r.MaxCost = sql.NullFloat64{Float64: v, Valid: v > 0} }

const runColumns = `id, session_id, started_by_session, model, status, max_steps, steps, input_messages, output, error_code, error_message, created_at, updated_at, finished_at, max_cost`

// InsertRun stores a new run.
func (tx *Tx) InsertRun(r *RunRow) error {
	_, err := tx.namedExec(`INSERT INTO runs (`+runColumns+`, node) VALUES
		(:id, :session_id, :started_by_session, :model, :status, :max_steps, :steps, :input_messages, :output, :error_code, :error_message, :created_at, :updated_at, :finished_at, :max_cost, :node)`,
		struct {
			*RunRow
			Node string `db:"node"` // this node drives the run
		}{r, tx.node})
	return err
}

// AppendRunMessages adds messages (JSON each) after the run's last one,
// all belonging to step, and sets the run's step count. The run's row is
// updated first: on PostgreSQL that locks it until commit, so the last
// message's number read next is not read by another node's append at
// the same time.
func (tx *Tx) AppendRunMessages(runID string, step int, messages [][]byte, now time.Time) error {
	res, err := tx.exec(`UPDATE runs SET steps = CASE WHEN steps < ? THEN ? ELSE steps END, updated_at = ? WHERE id = ? AND status = 'running'`,
		step, step, ms(now), runID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errors.New("store: the run is not running")
	}
	var next int
	if err := tx.get(&next, `SELECT COALESCE(MAX(seq) + 1, 0) FROM run_messages WHERE run_id = ?`, runID); err != nil {
		return err
	}
	for i, m := range messages {
		if _, err := tx.exec(`INSERT INTO run_messages (run_id, seq, step, message, created_at) VALUES (?, ?, ?, ?, ?)`,
			runID, next+i, step, string(m), ms(now)); err != nil {
			return err
		}
	}
	return nil
}

// FinishRun records a running run's end: status finished with output, or
// failed with an error code and message. False when it was not running.
func (tx *Tx) FinishRun(id, status, output, errCode, errMessage string, now time.Time) (bool, error) {
	res, err := tx.exec(`UPDATE runs SET status = ?, output = ?, error_code = ?, error_message = ?, updated_at = ?, finished_at = ?
		WHERE id = ? AND status = 'running'`, status, nullString(output), nullString(errCode), nullString(errMessage), ms(now), ms(now), id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// GetRun reads a run inside a transaction; nil when there is none.
func (tx *Tx) GetRun(id string) (*RunRow, error) {
	var r RunRow
	return rowOrNil(&r, tx.get(&r, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
}

// GetRun reads a run; nil when there is none.
func (s *Store) GetRun(ctx context.Context, id string) (*RunRow, error) {
	var r RunRow
	return rowOrNil(&r, s.read.get(ctx, &r, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
}

// callCost is what one call of a run counts for in the run's cost: what
// its answer reported, else the tool's estimate, else nothing; a denied
// call never ran and costs nothing.
const callCost = `CASE WHEN status = 'denied' THEN 0 ELSE COALESCE(cost, estimated_cost, 0) END`

// RunCost returns what a run has cost so far: the sum of callCost over its
// calls, leaving out those whose idempotency key starts with
// exceptKeyPrefix when it is set (the calls of a step being weighed
// again, which the agent loop counts at their estimates instead).
func (s *Store) RunCost(ctx context.Context, runID, exceptKeyPrefix string) (float64, error) {
	var cost float64
	err := s.read.get(ctx, &cost, `SELECT COALESCE(SUM(CASE
			WHEN ? <> '' AND substr(COALESCE(idempotency_key, ''), 1, ?) = ? THEN 0
			ELSE `+callCost+` END), 0)
		FROM calls WHERE run_id = ?`, exceptKeyPrefix, len(exceptKeyPrefix), exceptKeyPrefix, runID)
	return cost, err
}

// RunMessages returns a run's messages (JSON each) in order.
func (s *Store) RunMessages(ctx context.Context, runID string) ([][]byte, error) {
	var rows []string
	if err := s.read.sel(ctx, &rows, `SELECT message FROM run_messages WHERE run_id = ? ORDER BY seq`, runID); err != nil {
		return nil, err
	}
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r)
	}
	return out, nil
}

// RunningRunIDs lists the runs that have not ended, oldest first, for
// resuming them at start-up.
func (s *Store) RunningRunIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.read.sel(ctx, &ids, `SELECT id FROM runs WHERE status = 'running' ORDER BY id`)
	return ids, err
}

// RecentCallTimes returns when the calls of one tool in one session (or,
// with sessionID empty, of a built-in tool) were created at or after
// since, oldest first: what rate limits are counted from, inside the
// transaction that inserts the next call, so two calls cannot both slip
// under a limit. Only calls stored with RateLimited count: those made
// while the tool had a limit, which the partial index calls_rate_limited
// holds.
//
// On PostgreSQL, where other nodes insert calls too, the count first takes
// a lock on the (session, tool) pair held until commit, so that two nodes
// cannot both count the same calls and both insert one more.
func (tx *Tx) RecentCallTimes(sessionID, tool string, since time.Time) ([]time.Time, error) {
	var stamps []int64
	var err error
	if tx.pg != nil {
		if _, err := tx.exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, sessionID+"/"+tool); err != nil {
			return nil, err
		}
	}
	if sessionID == "" {
		err = tx.sel(&stamps, `SELECT created_at FROM calls WHERE session_id IS NULL AND tool = ? AND created_at >= ? AND rate_limited IS NOT NULL ORDER BY created_at`, tool, ms(since))
	} else {
		err = tx.sel(&stamps, `SELECT created_at FROM calls WHERE session_id = ? AND tool = ? AND created_at >= ? AND rate_limited IS NOT NULL ORDER BY created_at`, sessionID, tool, ms(since))
	}
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, len(stamps))
	for i, v := range stamps {
		out[i] = fromMS(v)
	}
	return out, nil
}

// OpenBuiltinCalls lists the calls of built-in tools that are stored as
// pending and have not ended: those a stopped process was running, to be
// run again at start-up.
func (s *Store) OpenBuiltinCalls(ctx context.Context) ([]CallRow, error) {
	var rows []CallRow
	err := s.read.sel(ctx, &rows, `SELECT `+callColumns+` FROM calls WHERE session_id IS NULL AND status IN ('pending', 'delivered') ORDER BY id`)
	return rows, err
}

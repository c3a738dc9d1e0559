package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
)

// ToolRow is a registered tool as stored.
type ToolRow struct {
	SessionID        string `db:"session_id"`
	Name             string `db:"name"`
	Description      string `db:"description"`
	Parameters       string `db:"parameters"`
	TimeoutMS        int64  `db:"timeout_ms"`
	RequiresApproval string `db:"requires_approval"`
	RatePerMinute    int    `db:"rate_per_minute"`
	RatePerHour      int    `db:"rate_per_hour"`
	ReadOnly         bool   `db:"read_only"`
	RegisteredAt     int64  `db:"registered_at"`
	// The tool's own estimates, zero when it gives none.
	EstimatedCost       float64 `db:"estimated_cost"`
	EstimatedDurationMS int64   `db:"estimated_duration_ms"`
	// RequiresSanitization is the spec's requires_sanitization; NULL when
	// the tool left it to the default (toolgate.NeedsSanitization).
	RequiresSanitization sql.NullBool `db:"requires_sanitization"`
	// Presentation is the spec's title, annotations, output schema and
	// icons as a JSON object; "" when it has none of them.
	Presentation string `db:"presentation"`
}

// Spec converts the row to the tool's spec.
func (r *ToolRow) Spec() toolgate.ToolSpec {
	spec := toolgate.ToolSpec{
		Name:             r.Name,
		Description:      r.Description,
		Parameters:       []byte(r.Parameters),
		TimeoutMS:        r.TimeoutMS,
		RequiresApproval: toolgate.Approval(r.RequiresApproval),
		ReadOnly:         r.ReadOnly,

		EstimatedCost:       r.EstimatedCost,
		EstimatedDurationMS: r.EstimatedDurationMS,
	}
	if r.RequiresSanitization.Valid {
		v := r.RequiresSanitization.Bool
		spec.RequiresSanitization = &v
	}
	if r.Presentation != "" {
		// Written by NewToolRow from a checked spec: it decodes.
		var p toolgate.Presentation
		_ = json.Unmarshal([]byte(r.Presentation), &p)
		spec.SetPresentation(p)
	}
	if r.RatePerMinute > 0 || r.RatePerHour > 0 {
		spec.RateLimit = &toolgate.RateLimit{RequestsPerMinute: r.RatePerMinute, RequestsPerHour: r.RatePerHour}
	}
	return spec
}

// RegisteredTime returns when the tool was registered.
func (r *ToolRow) RegisteredTime() time.Time { return fromMS(r.RegisteredAt) }

// NewToolRow builds the stored form of a validated spec.
func NewToolRow(sessionID string, spec toolgate.ToolSpec, now time.Time) ToolRow {
	r := ToolRow{
		SessionID:        sessionID,
		Name:             spec.Name,
		Description:      spec.Description,
		Parameters:       string(spec.Parameters),
		TimeoutMS:        spec.TimeoutMS,
		RequiresApproval: string(spec.RequiresApproval),
		ReadOnly:         spec.ReadOnly,
		RegisteredAt:     ms(now),

		EstimatedCost:       spec.EstimatedCost,
		EstimatedDurationMS: spec.EstimatedDurationMS,
	}
	if spec.RequiresSanitization != nil {
		r.RequiresSanitization = sql.NullBool{Bool: *spec.RequiresSanitization, Valid: true}
	}
	if p := spec.Presentation(); p.Title != "" || p.Annotations != nil || len(p.OutputSchema) > 0 || len(p.Icons) > 0 {
		if b, err := json.Marshal(p); err == nil {
			r.Presentation = string(b)
		}
	}
	if r.RequiresApproval == "" {
		r.RequiresApproval = string(toolgate.ApprovalNever)
	}
	if spec.RateLimit != nil {
		r.RatePerMinute = spec.RateLimit.RequestsPerMinute
		r.RatePerHour = spec.RateLimit.RequestsPerHour
	}
	return r
}

const toolColumns = `session_id, name, description, parameters, timeout_ms, requires_approval, rate_per_minute, rate_per_hour, read_only, registered_at, estimated_cost, estimated_duration_ms, requires_sanitization, presentation`

var (
	// With :name arguments, prepared at first use (see namedExec).
	qUpsertTool = `INSERT INTO tools (` + toolColumns + `) VALUES
		(:session_id, :name, :description, :parameters, :timeout_ms, :requires_approval, :rate_per_minute, :rate_per_hour, :read_only, :registered_at,
		 :estimated_cost, :estimated_duration_ms, :requires_sanitization, :presentation)
		ON CONFLICT (session_id, name) DO UPDATE SET
		description = excluded.description, parameters = excluded.parameters, timeout_ms = excluded.timeout_ms,
		requires_approval = excluded.requires_approval, rate_per_minute = excluded.rate_per_minute,
		rate_per_hour = excluded.rate_per_hour, read_only = excluded.read_only, registered_at = excluded.registered_at,
		estimated_cost = excluded.estimated_cost, estimated_duration_ms = excluded.estimated_duration_ms,
		requires_sanitization = excluded.requires_sanitization, presentation = excluded.presentation`
	qDeleteTool   = query(`DELETE FROM tools WHERE session_id = ? AND name = ?`)
	qSessionTools = query(`SELECT ` + toolColumns + ` FROM tools WHERE session_id = ? ORDER BY name`)

	// A page of the tools of every session, newest session first (ids are
	// UUIDv7), by name within one: the rest of the cursor's session, a
	// range of the primary key, then the sessions before it, a range of
	// tools_newest_first (migration 0006). A closed session has no tools
	// (CloseSession deletes them).
	qToolsFirstPage        = query(`SELECT ` + toolColumns + ` FROM tools ORDER BY session_id DESC, name LIMIT ?`)
	qToolsOfSessionAfter   = query(`SELECT ` + toolColumns + ` FROM tools WHERE session_id = ? AND name > ? ORDER BY name LIMIT ?`)
	qToolsOfSessionsBefore = query(`SELECT ` + toolColumns + ` FROM tools WHERE session_id < ? ORDER BY session_id DESC, name LIMIT ?`)
)

// UpsertTool registers a tool or replaces the session's tool of that name.
func (tx *Tx) UpsertTool(r *ToolRow) error {
	_, err := tx.namedExec(qUpsertTool, r)
	tx.note(ChangeSession, r.SessionID)
	return err
}

// DeleteTool removes one tool of a session; false when it had none by that name.
func (tx *Tx) DeleteTool(sessionID, name string) (bool, error) {
	res, err := tx.exec(qDeleteTool, sessionID, name)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		tx.note(ChangeSession, sessionID)
	}
	return n > 0, nil
}

// SessionTools lists the tools of one session, within a write transaction.
func (tx *Tx) SessionTools(sessionID string) ([]ToolRow, error) {
	var rows []ToolRow
	err := tx.sel(&rows, qSessionTools, sessionID)
	return rows, err
}

// ToolsPage lists up to limit tools, newest session first and by name
// within one, those after the tool (afterSession, afterName): the last
// tool of the previous page is the next page's cursor; afterSession ""
// starts from the first.
func (s *Store) ToolsPage(ctx context.Context, afterSession, afterName string, limit int) ([]ToolRow, error) {
	var rows []ToolRow
	if afterSession == "" {
		err := s.read.sel(ctx, &rows, qToolsFirstPage, limit)
		return rows, err
	}
	if err := s.read.sel(ctx, &rows, qToolsOfSessionAfter, afterSession, afterName, limit); err != nil {
		return nil, err
	}
	if len(rows) == limit {
		return rows, nil
	}
	var more []ToolRow
	err := s.read.sel(ctx, &more, qToolsOfSessionsBefore, afterSession, limit-len(rows))
	return append(rows, more...), err
}

// ListTools lists the tools of every open session, or of one when
// sessionID is set, ordered by session and name.
func (s *Store) ListTools(ctx context.Context, sessionID string) ([]ToolRow, error) {
	var rows []ToolRow
	q := `SELECT t.session_id, t.name, t.description, t.parameters, t.timeout_ms, t.requires_approval, t.rate_per_minute, t.rate_per_hour, t.read_only, t.registered_at,
		t.estimated_cost, t.estimated_duration_ms, t.requires_sanitization, t.presentation
		FROM tools t JOIN sessions s ON s.id = t.session_id WHERE s.closed_at IS NULL`
	args := []any{}
	if sessionID != "" {
		q += ` AND t.session_id = ?`
		args = append(args, sessionID)
	}
	q += ` ORDER BY t.session_id, t.name`
	err := s.read.sel(ctx, &rows, q, args...)
	return rows, err
}

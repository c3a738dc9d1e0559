package store

import (
	"context"
	"time"

	"github.com/toolgate/toolgate"
)

// MCPTasks are the records of MCP tasks (table mcp_tasks, migrations 0013
// / postgres 0006): a task is a call made through /mcp, kept with the
// route and credential that made it and its expiry. The call itself is
// the calls table's, so a task's state is read there; this record only
// says who may see it and until when.
type MCPTasks struct{ s *Store }

// MCPTasks returns the store's MCP task records.
func (s *Store) MCPTasks() *MCPTasks { return &MCPTasks{s: s} }

// pruneMCPTasksBatch bounds the expired records one CreateMCPTask deletes.
const pruneMCPTasksBatch = 100

type mcpTaskRow struct {
	CallID    string `db:"call_id"`
	Route     string `db:"route"`
	Owner     string `db:"owner"`
	CreatedAt int64  `db:"created_at"`
	ExpiresAt int64  `db:"expires_at"`
}

func (r *mcpTaskRow) task() *toolgate.MCPTask {
	return &toolgate.MCPTask{
		ID: r.CallID, Route: r.Route, Owner: r.Owner,
		CreatedAt: fromMS(r.CreatedAt), TTL: time.Duration(r.ExpiresAt-r.CreatedAt) * time.Millisecond,
	}
}

const mcpTaskColumns = `call_id, route, owner, created_at, expires_at`

var (
	qPutMCPTask = query(`INSERT INTO mcp_tasks (` + mcpTaskColumns + `) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (call_id) DO NOTHING`)
	qPruneMCPTasks = query(`DELETE FROM mcp_tasks WHERE call_id IN
		(SELECT call_id FROM mcp_tasks WHERE expires_at <= ? LIMIT ?)`)
	qGetMCPTask        = query(`SELECT ` + mcpTaskColumns + ` FROM mcp_tasks WHERE call_id = ? AND expires_at > ?`)
	qListMCPTasksFirst = query(`SELECT ` + mcpTaskColumns + ` FROM mcp_tasks
		WHERE route = ? AND owner = ? AND expires_at > ? ORDER BY call_id DESC LIMIT ?`)
	qListMCPTasks = query(`SELECT ` + mcpTaskColumns + ` FROM mcp_tasks
		WHERE route = ? AND owner = ? AND expires_at > ? AND call_id < ? ORDER BY call_id DESC LIMIT ?`)
)

// CreateMCPTask records t (a second record of the same call by the same
// route and owner keeps the first), and deletes a bounded batch of
// expired records meanwhile. The call being another route's or owner's
// task (an idempotency key used again elsewhere) is CONFLICT: that task
// could not be read by the one asking.
func (m *MCPTasks) CreateMCPTask(ctx context.Context, t toolgate.MCPTask) error {
	return m.s.Write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(qPruneMCPTasks, ms(t.CreatedAt), pruneMCPTasksBatch); err != nil {
			return err
		}
		res, err := tx.exec(qPutMCPTask, t.ID, t.Route, t.Owner, ms(t.CreatedAt), ms(t.ExpiresAt()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var first mcpTaskRow
		if err := tx.get(&first, qGetMCPTask, t.ID, ms(t.CreatedAt)); err != nil {
			return err
		}
		if first.Route != t.Route || first.Owner != t.Owner {
			return toolgate.Errorf(toolgate.EConflict, "call %s is already a task of another route or credential (its idempotency key was used there): use another key", t.ID)
		}
		return nil
	})
}

// MCPTask returns the record of the task id unless it has expired by now;
// nil when there is none.
func (m *MCPTasks) MCPTask(ctx context.Context, id string, now time.Time) (*toolgate.MCPTask, error) {
	var r mcpTaskRow
	row, err := rowOrNil(&r, m.s.read.get(ctx, &r, qGetMCPTask, id, ms(now)))
	if row == nil {
		return nil, err
	}
	return row.task(), nil
}

// ListMCPTasks returns up to limit unexpired tasks of route and owner,
// newest first, made before the task before ("" from the newest).
func (m *MCPTasks) ListMCPTasks(ctx context.Context, route, owner, before string, now time.Time, limit int) ([]*toolgate.MCPTask, error) {
	var rows []mcpTaskRow
	var err error
	if before == "" {
		err = m.s.read.sel(ctx, &rows, qListMCPTasksFirst, route, owner, ms(now), limit)
	} else {
		err = m.s.read.sel(ctx, &rows, qListMCPTasks, route, owner, ms(now), before, limit)
	}
	if err != nil {
		return nil, err
	}
	tasks := make([]*toolgate.MCPTask, len(rows))
	for i := range rows {
		tasks[i] = rows[i].task()
	}
	return tasks, nil
}

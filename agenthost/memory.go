package agenthost

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/store"
)

// memoryNotes is the agent's notes in the gateway's database
// (store.WriteMemory and the rest): the agentloop.MemoryStore of the
// built-in memory tools. The store checks every bound and returns its
// refusals as *toolgate.Error (INVALID_ARGS, CONFLICT), which reach the
// model or the caller as the call's error as they are.
type memoryNotes struct {
	st  *store.Store
	now func() time.Time
}

// WriteMemory implements agentloop.MemoryStore.
func (m memoryNotes) WriteMemory(ctx context.Context, scope, key, text string) (bool, error) {
	return m.st.WriteMemory(ctx, store.MemoryWrite{Scope: scope, Key: key, Text: text, Now: m.now()})
}

// ReadMemory implements agentloop.MemoryStore.
func (m memoryNotes) ReadMemory(ctx context.Context, scope, key string) (*agentloop.MemoryNote, error) {
	row, err := m.st.ReadMemory(ctx, scope, key)
	if err != nil || row == nil {
		return nil, err
	}
	note := memoryNote(row)
	return &note, nil
}

// SearchMemory implements agentloop.MemoryStore.
func (m memoryNotes) SearchMemory(ctx context.Context, scope, query string, limit int) ([]agentloop.MemoryNote, error) {
	rows, err := m.st.SearchMemory(ctx, scope, query, limit)
	if err != nil {
		return nil, err
	}
	notes := make([]agentloop.MemoryNote, len(rows))
	for i := range rows {
		notes[i] = memoryNote(&rows[i])
	}
	return notes, nil
}

// memoryNote is a stored note as the memory tools see it.
func memoryNote(r *store.MemoryRow) agentloop.MemoryNote {
	return agentloop.MemoryNote{Key: r.Key, Text: r.Text, CreatedAt: r.Created(), UpdatedAt: r.Updated()}
}

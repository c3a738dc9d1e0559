package agenthost

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// runStore keeps the agent loop's runs in the store (agentloop.RunStore).
type runStore struct {
	st  *store.Store
	now func() time.Time
}

// CreateRun implements agentloop.RunStore: the run and its input messages
// in one transaction.
func (s runStore) CreateRun(ctx context.Context, run *toolgate.Run) error {
	msgs, err := encodeMessages(run.Messages)
	if err != nil {
		return err
	}
	row := store.NewRunRow(run.ID, run.SessionID, run.StartedBySession, run.Model, run.MaxSteps, run.InputMessages, run.CreatedAt.Time)
	row.SetMaxCost(run.MaxCost)
	return s.st.Write(ctx, func(tx *store.Tx) error {
		if err := tx.InsertRun(&row); err != nil {
			return err
		}
		return tx.AppendRunMessages(run.ID, 0, msgs, run.CreatedAt.Time)
	})
}

// AppendMessages implements agentloop.RunStore.
func (s runStore) AppendMessages(ctx context.Context, runID string, steps int, msgs []toolgate.ChatMessage) error {
	encoded, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	now := s.now()
	return s.st.Write(ctx, func(tx *store.Tx) error { return tx.AppendRunMessages(runID, steps, encoded, now) })
}

// FinishRun implements agentloop.RunStore.
func (s runStore) FinishRun(ctx context.Context, runID string, status toolgate.RunStatus, output string, runErr *toolgate.CallError) error {
	var code, message string
	if runErr != nil {
		code, message = runErr.Code, runErr.Message
	}
	now := s.now()
	return s.st.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.FinishRun(runID, string(status), output, code, message, now)
		return err
	})
}

// LoadRun implements agentloop.RunStore.
func (s runStore) LoadRun(ctx context.Context, runID string) (*toolgate.Run, error) {
	row, err := s.st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no run %s", runID)
	}
	raw, err := s.st.RunMessages(ctx, runID)
	if err != nil {
		return nil, err
	}
	run := &toolgate.Run{
		ID: row.ID, SessionID: row.SessionID.String, StartedBySession: row.StartedBySession, Model: row.Model,
		Status: toolgate.RunStatus(row.Status), MaxSteps: row.MaxSteps, Steps: row.Steps, Output: row.Output.String,
		CreatedAt: toolgate.NewTime(row.CreatedTime()), UpdatedAt: toolgate.NewTime(row.UpdatedTime()),
		FinishedAt: toolgate.TimePtr(row.FinishedTime()), InputMessages: row.InputMessages,
		Messages: make([]toolgate.ChatMessage, len(raw)),
	}
	if row.MaxCost.Valid {
		run.MaxCost = row.MaxCost.Float64
	}
	if run.Cost, err = s.st.RunCost(ctx, runID, ""); err != nil {
		return nil, err
	}
	if row.ErrorCode.Valid {
		run.Error = &toolgate.CallError{Code: row.ErrorCode.String, Message: row.ErrorMessage.String}
	}
	for i, m := range raw {
		if err := json.Unmarshal(m, &run.Messages[i]); err != nil {
			return nil, fmt.Errorf("run %s message %d: %w", runID, i, err)
		}
	}
	return run, nil
}

// RunCost implements agentloop.RunStore.
func (s runStore) RunCost(ctx context.Context, runID, exceptKeyPrefix string) (float64, error) {
	return s.st.RunCost(ctx, runID, exceptKeyPrefix)
}

func encodeMessages(msgs []toolgate.ChatMessage) ([][]byte, error) {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

package toolgate_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// TestRunJSON pins the JSON of a run, as GET /v1/runs/{id} and the run
// events show it, byte for byte: field names, order and what is left out
// when empty.
func TestRunJSON(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dur := int64(1500)
	full := &toolgate.Run{
		ID: "r1", SessionID: "s1", StartedBySession: "s1", Model: "m", Status: toolgate.RunFailed, MaxSteps: 8, Steps: 2,
		Output: "done", Error: &toolgate.CallError{Code: toolgate.EMaxSteps, Message: "too many"},
		CreatedAt: toolgate.NewTime(at), UpdatedAt: toolgate.NewTime(at.Add(time.Second)), FinishedAt: toolgate.TimePtr(at.Add(2 * time.Second)),
		InputMessages: 1,
		Messages: []toolgate.ChatMessage{
			{Role: toolgate.RoleUser, Content: "hi"},
			{Role: toolgate.RoleAssistant, ToolCalls: []toolgate.ChatToolCall{{ID: "t1", Type: "function", Function: toolgate.ChatFunctionCall{Name: "echo", Arguments: `{"a":1}`}}}},
			{Role: toolgate.RoleTool, ToolCallID: "t1", Name: "echo", Content: "x"},
		},
		Calls: []*toolgate.Call{{ID: "c1", Tool: "echo", Args: json.RawMessage(`{"a":1}`), Status: toolgate.StatusCompleted,
			CreatedAt: toolgate.NewTime(at), Deadline: toolgate.NewTime(at), DurationMS: &dur, Attempts: 1, RunID: "r1"}},
	}
	empty := &toolgate.Run{ID: "r2", Model: "m", Status: toolgate.RunRunning, MaxSteps: 8, Messages: []toolgate.ChatMessage{}}
	cases := []struct {
		run  *toolgate.Run
		want string
	}{
		{full, `{"id":"r1","session_id":"s1","started_by_session":"s1","model":"m","status":"failed","max_steps":8,"steps":2,"output":"done",` +
			`"error":{"code":"MAX_STEPS","message":"too many"},"created_at":"2026-11-21T12:00:00.000Z","updated_at":"2026-11-21T12:00:01.000Z",` +
			`"finished_at":"2026-11-21T12:00:02.000Z","input_messages":1,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"t1","type":"function","function":{"name":"echo","arguments":"{\"a\":1}"}}]},` +
			`{"role":"tool","content":"x","tool_call_id":"t1","name":"echo"}],"calls":[{"id":"c1","tool":"echo","args":{"a":1},"status":"completed",` +
			`"created_at":"2026-11-21T12:00:00.000Z","delivered_at":null,"completed_at":null,"deadline":"2026-11-21T12:00:00.000Z","duration_ms":1500,` +
			`"attempts":1,"run_id":"r1"}]}`},
		{empty, `{"id":"r2","model":"m","status":"running","max_steps":8,"steps":0,"created_at":"0001-01-01T00:00:00.000Z",` +
			`"updated_at":"0001-01-01T00:00:00.000Z","finished_at":null,"input_messages":0,"messages":[]}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.run)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("run %s on the wire:\n got %s\nwant %s", c.run.ID, got, c.want)
		}
	}
}

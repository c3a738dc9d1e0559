package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// A second record of a task's call keeps the first when it comes from the
// same route and credential (a retry), and is CONFLICT from another: its
// host could never read the first.
func TestMCPTaskRecordedOnce(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		defer st.Close()
		ctx := context.Background()
		now := time.Now()
		task := toolgate.MCPTask{ID: "01a21e8b-60ed-796a-ba6e-f9a990b9351b", Route: "", Owner: "a", CreatedAt: now, TTL: time.Hour}
		if err := st.MCPTasks().CreateMCPTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		if err := st.MCPTasks().CreateMCPTask(ctx, task); err != nil {
			t.Fatalf("the same task again: %v", err)
		}
		other := task
		other.Route = "01a21e8b-0000-7000-8000-000000000000"
		if err := st.MCPTasks().CreateMCPTask(ctx, other); toolgate.ErrorCode(err) != toolgate.EConflict {
			t.Fatalf("the call as another route's task: %v, want CONFLICT", err)
		}
		got, err := st.MCPTasks().MCPTask(ctx, task.ID, now)
		if err != nil || got == nil || got.Route != task.Route || got.Owner != task.Owner {
			t.Fatalf("the first record: %+v %v", got, err)
		}
	})
}

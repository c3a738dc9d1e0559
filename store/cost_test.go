package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

func costOf(v float64) *float64 { return &v }

// TestCallCostsAndRunCost: a call keeps the tool's estimate and the cost
// its answer reported (a failed one too), the same in the record kept in
// memory and in the table after a restart, and in the call_history view;
// a run keeps its max_cost, and its cost is the sum of its calls' reported
// costs, else their estimates — a denied call and another run's calls
// counting for nothing, and the calls of a step left out when asked.
func TestCallCostsAndRunCost(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, path := openStore(t)
		ctx := context.Background()
		now := time.Now()
		insertSession(t, st, "s")
		run := store.NewRunRow("run-1", "s", "", "m", 8, 1, now)
		run.SetMaxCost(7.5)
		free := store.NewRunRow("run-free", "s", "", "m", 8, 1, now)
		type call struct {
			id, run, key string
			status       toolgate.CallStatus
			estimate     float64
		}
		calls := []call{
			{"answered", "run-1", "", toolgate.StatusPending, 1},
			{"estimated", "run-1", "", toolgate.StatusPending, 1.5},
			{"failed", "run-1", "", toolgate.StatusPending, 0},
			{"denied", "run-1", "", toolgate.StatusAwaitingApproval, 4},
			{"open", "run-1", "run:run-1:2:0:call_2_0", toolgate.StatusPending, 2},
			{"other-run", "run-free", "", toolgate.StatusPending, 3},
		}
		err := st.Write(ctx, func(tx *store.Tx) error {
			for _, r := range []*store.RunRow{&run, &free} {
				if err := tx.InsertRun(r); err != nil {
					return err
				}
			}
			for _, c := range calls {
				row := store.NewCallRow(c.id, "s", "echo", []byte(`{}`), c.status, time.Minute, now)
				row.SetRunID(c.run)
				row.SetIdempotencyKey(c.key)
				row.SetEstimatedCost(c.estimate)
				if err := tx.InsertCall(&row); err != nil {
					return err
				}
			}
			ended, err := tx.FinishAnswered("answered", "s", store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(`1`), Cost: costOf(2.5)}, now, now, 1)
			if err != nil || ended == nil {
				t.Fatalf("answer: %v %v", ended, err)
			}
			tx.RememberFinal(*ended)
			if _, err := tx.FinishCall("estimated", store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(`2`)}, now); err != nil {
				return err
			}
			if _, err := tx.FinishCall("failed", store.Outcome{Status: toolgate.StatusFailed, ErrorCode: "QUOTA", ErrorMessage: "spent", Cost: costOf(0.25)}, now); err != nil {
				return err
			}
			_, err = tx.FinishAwaiting("denied", store.Outcome{Status: toolgate.StatusDenied, ErrorCode: toolgate.EDenied, ErrorMessage: "no"}, now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		memory, err := st.GetCall(ctx, "answered") // from the finals kept in memory
		if err != nil {
			t.Fatal(err)
		}
		checkRunCost := func(st *store.Store) {
			t.Helper()
			for _, tc := range []struct {
				run, except string
				want        float64
			}{
				{"run-1", "", 2.5 + 1.5 + 0.25 + 2},
				{"run-1", "run:run-1:2:", 2.5 + 1.5 + 0.25},
				{"run-1", "run:run-1:1:", 2.5 + 1.5 + 0.25 + 2},
				{"run-free", "", 3},
				{"no-such-run", "", 0},
			} {
				got, err := st.RunCost(ctx, tc.run, tc.except)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("RunCost(%s, %q) = %v, want %v", tc.run, tc.except, got, tc.want)
				}
			}
		}
		checkRunCost(st)
		st.Close()

		st, err = store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		checkRunCost(st)
		table, err := st.GetCall(ctx, "answered")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := json.Marshal(memory.Call())
		tb, _ := json.Marshal(table.Call())
		if string(m) != string(tb) {
			t.Errorf("the record in memory and in the table differ:\n%s\n%s", m, tb)
		}
		want := map[string][2]*float64{ // estimated_cost, cost
			"answered":  {costOf(1), costOf(2.5)},
			"estimated": {costOf(1.5), nil},
			"failed":    {nil, costOf(0.25)},
			"denied":    {costOf(4), nil},
		}
		for id, w := range want {
			row, err := st.GetCall(ctx, id)
			if err != nil || row == nil {
				t.Fatalf("%s: %v %v", id, row, err)
			}
			c := row.Call()
			if !sameCost(c.EstimatedCost, w[0]) || !sameCost(c.Cost, w[1]) {
				t.Errorf("%s: estimated_cost %v cost %v, want %v %v", id, show(c.EstimatedCost), show(c.Cost), show(w[0]), show(w[1]))
			}
		}
		// The view, read as an operator would, beside the gateway.
		driver, q := "sqlite", `SELECT estimated_cost, cost FROM call_history WHERE call_id = ?`
		if onPostgres(t) {
			driver, q = "pgx", `SELECT estimated_cost, cost FROM call_history WHERE call_id = $1`
		}
		db, err := sql.Open(driver, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var estimated, cost sql.NullFloat64
		if err := db.QueryRowContext(ctx, q, "answered").Scan(&estimated, &cost); err != nil {
			t.Fatal(err)
		}
		if estimated != (sql.NullFloat64{Float64: 1, Valid: true}) || cost != (sql.NullFloat64{Float64: 2.5, Valid: true}) {
			t.Errorf("call_history shows estimated_cost %v cost %v", estimated, cost)
		}
		for id, want := range map[string]*float64{"run-1": costOf(7.5), "run-free": nil} {
			row, err := st.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got := (*float64)(nil)
			if row.MaxCost.Valid {
				got = &row.MaxCost.Float64
			}
			if !sameCost(got, want) {
				t.Errorf("run %s max_cost %v, want %v", id, show(got), show(want))
			}
		}
	})
}

func sameCost(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func show(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// TestConditionalDecisions: ApproveCall and FinishAwaiting change only a
// call awaiting approval, so the second of two decisions changes nothing;
// ExpireCall ends only a call still overdue and in the phase it was read
// in. The row an approve leaves is the one an answer then composes from.
func TestConditionalDecisions(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "s")
		now := time.Now().Truncate(time.Millisecond)
		denied := store.Outcome{Status: toolgate.StatusDenied, ErrorCode: toolgate.EDenied, ErrorMessage: "no"}
		timedOut := store.Outcome{Status: toolgate.StatusTimedOut, ErrorCode: toolgate.ETimeout, ErrorMessage: "late"}
		insert := func(tx *store.Tx, id string, status toolgate.CallStatus) error {
			row := store.NewCallRow(id, "s", "echo", []byte(`{}`), status, time.Minute, now)
			return tx.InsertCall(&row)
		}
		check := func(what string, got, want bool, err error) {
			t.Helper()
			if err != nil || got != want {
				t.Fatalf("%s: changed %v, want %v (err %v)", what, got, want, err)
			}
		}
		status := func(id string) string {
			t.Helper()
			row, err := st.GetCall(ctx, id)
			if err != nil || row == nil {
				t.Fatalf("read %s: %v %v", id, row, err)
			}
			return row.Status
		}
		approvedDeadline := now.Add(5 * time.Minute)
		err := st.Write(ctx, func(tx *store.Tx) error {
			for _, id := range []string{"approve", "deny", "expire-awaiting"} {
				if err := insert(tx, id, toolgate.StatusAwaitingApproval); err != nil {
					return err
				}
			}
			if err := insert(tx, "sent", toolgate.StatusPending); err != nil {
				return err
			}
			ok, err := tx.ApproveCall("approve", approvedDeadline)
			check("approve", ok, true, err)
			ok, err = tx.ApproveCall("approve", approvedDeadline)
			check("approve again", ok, false, err)
			ok, err = tx.FinishAwaiting("approve", denied, now)
			check("deny an approved call", ok, false, err)

			ok, err = tx.FinishAwaiting("deny", denied, now)
			check("deny", ok, true, err)
			ok, err = tx.ApproveCall("deny", approvedDeadline)
			check("approve a denied call", ok, false, err)
			ok, err = tx.FinishAwaiting("sent", denied, now)
			check("deny a pending call", ok, false, err)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := status("approve"); got != "pending" {
			t.Fatalf("approved call is %s", got)
		}
		if got := status("deny"); got != "denied" {
			t.Fatalf("denied call is %s", got)
		}

		// Expiry: before the deadline nothing; in the wrong phase nothing;
		// after a progress report pushed the deadline out nothing.
		late := now.Add(2 * time.Minute)
		err = st.Write(ctx, func(tx *store.Tx) error {
			ok, err := tx.ExpireCall("sent", false, timedOut, now)
			check("expire before the deadline", ok, false, err)
			ok, err = tx.ExpireCall("sent", true, timedOut, late)
			check("expire a sent call as awaiting", ok, false, err)
			ok, err = tx.ExpireCall("expire-awaiting", false, timedOut, late)
			check("expire an awaiting call as sent", ok, false, err)
			if _, err := tx.SetProgress("sent", []byte(`{"pct":1}`), late.Add(time.Minute)); err != nil {
				return err
			}
			ok, err = tx.ExpireCall("sent", false, timedOut, late)
			check("expire after progress moved the deadline", ok, false, err)
			ok, err = tx.ExpireCall("sent", false, timedOut, late.Add(time.Minute))
			check("expire at the moved deadline", ok, true, err)
			ok, err = tx.ExpireCall("expire-awaiting", true, timedOut, late)
			check("expire an awaiting call", ok, true, err)
			ok, err = tx.ExpireCall("approve", false, timedOut, late)
			check("expire an approved call before its new deadline", ok, false, err)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"sent", "expire-awaiting"} {
			if got := status(id); got != "timed_out" {
				t.Fatalf("%s is %s after expiry", id, got)
			}
		}

		// The answer to the approved call composes its record from the
		// row the approve left (on SQLite) or reads it back: both carry
		// the new deadline and status.
		ended, err := store.WriteValue(ctx, st, func(tx *store.Tx) (*store.CallRow, error) {
			return tx.FinishAnswered("approve", "s", store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(`1`)}, now, now, 1)
		})
		if err != nil || ended == nil {
			t.Fatalf("answer the approved call: %v %v", ended, err)
		}
		stored, err := st.GetCall(ctx, "approve")
		if err != nil {
			t.Fatal(err)
		}
		if ended.Deadline != approvedDeadline.UnixMilli() || *ended != *stored {
			t.Fatalf("answered record %+v, table %+v", *ended, *stored)
		}
	})
}

// TestPostgresOneDecisionWinsAcrossNodes: an approve on one node and a
// deny on another, at once, on each of many calls: exactly one changes
// the call.
func TestPostgresOneDecisionWinsAcrossNodes(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	insertSession(t, a, "s")
	const calls = 30
	insertCalls(t, a, "s", calls, toolgate.StatusAwaitingApproval)
	for i := range calls {
		var approved, denied bool
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			approved, err = store.WriteValue(ctx, a, func(tx *store.Tx) (bool, error) {
				return tx.ApproveCall(callID(i), time.Now().Add(time.Minute))
			})
			if err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			var err error
			denied, err = store.WriteValue(ctx, b, func(tx *store.Tx) (bool, error) {
				return tx.FinishAwaiting(callID(i), store.Outcome{Status: toolgate.StatusDenied, ErrorCode: toolgate.EDenied, ErrorMessage: "no"}, time.Now())
			})
			if err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if approved == denied {
			t.Fatalf("call %d: approved %v, denied %v: want exactly one", i, approved, denied)
		}
		want := toolgate.StatusPending
		if denied {
			want = toolgate.StatusDenied
		}
		if row, err := b.GetCall(ctx, callID(i)); err != nil || row == nil || row.Status != string(want) {
			t.Fatalf("call %d after the decisions: %+v %v", i, row, err)
		}
	}
}

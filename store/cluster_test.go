package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Two stores stand for two nodes: a lease goes to one until it lapses; a
// run and a built-in call whose node's lease lapsed are claimed by exactly
// one other node.
func TestLeasesAndClaims(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		a, path := openStore(t)
		ctx := context.Background()
		now := time.Now()
		clock := func() time.Time { return now }
		a.Now = clock
		b, err := store.Open(path, nil) // a second node
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Now = clock
		if a.Node() == b.Node() || a.Node() == "" {
			t.Fatalf("node ids %q and %q, want two different ones", a.Node(), b.Node())
		}
		take := func(s *store.Store, name string) bool {
			t.Helper()
			ok, err := s.TakeLease(ctx, name, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !take(a, "sweeper") || take(b, "sweeper") || !take(a, "sweeper") {
			t.Fatal("a lease held by one node went to the other, or its holder could not renew it")
		}
		now = now.Add(11 * time.Second)
		if !take(b, "sweeper") || take(a, "sweeper") {
			t.Fatal("a lapsed lease was not taken over")
		}
		if err := b.ReleaseLease(ctx, "sweeper"); err != nil || !take(a, "sweeper") {
			t.Fatalf("a released lease could not be taken (%v)", err)
		}

		// Node a drives a run and runs a built-in call while its lease lives.
		take(a, store.NodeLease(a.Node()))
		run := store.NewRunRow("run-1", "", "", "fake", 5, 1, now)
		call := store.NewCallRow("call-1", "", "clock", []byte("{}"), "pending", time.Minute, now)
		if err := a.Write(ctx, func(tx *store.Tx) error {
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
			return tx.InsertCall(&call)
		}); err != nil {
			t.Fatal(err)
		}
		runs, err := b.OrphanedRuns(ctx)
		calls, err2 := b.OrphanedBuiltinCalls(ctx)
		if err != nil || err2 != nil || len(runs) != 0 || len(calls) != 0 {
			t.Fatalf("work of a live node listed as orphaned: %v %v (%v %v)", runs, calls, err, err2)
		}
		now = now.Add(11 * time.Second) // a's lease lapses
		runs, _ = b.OrphanedRuns(ctx)
		calls, _ = b.OrphanedBuiltinCalls(ctx)
		if len(runs) != 1 || runs[0] != (store.Orphan{ID: "run-1", Node: a.Node()}) || len(calls) != 1 || calls[0].ID != "call-1" {
			t.Fatalf("orphans %v %v, want run-1 and call-1 of node a", runs, calls)
		}
		claim := func(s *store.Store) (bool, bool) {
			ok, err := store.WriteValue(ctx, s, func(tx *store.Tx) ([2]bool, error) {
				r, err := tx.ClaimRun(runs[0])
				if err != nil {
					return [2]bool{}, err
				}
				c, err := tx.ClaimCall(calls[0])
				return [2]bool{r, c}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			return ok[0], ok[1]
		}
		if r, c := claim(b); !r || !c {
			t.Fatal("the first claim failed")
		}
		if r, c := claim(a); r || c {
			t.Fatal("a second claim of the same orphan succeeded")
		}
		take(b, store.NodeLease(b.Node()))
		if runs, _ := a.OrphanedRuns(ctx); len(runs) != 0 {
			t.Fatalf("a claimed run of a live node is still orphaned: %v", runs)
		}
		// The node the call was taken from cannot store its outcome; the
		// claimer can, once; and the claimer's node is the call's.
		finish := func(s *store.Store) bool {
			ok, err := store.WriteValue(ctx, s, func(tx *store.Tx) (bool, error) {
				return tx.FinishOwnCall("call-1", store.Outcome{Status: "completed", Output: []byte(`1`)}, now)
			})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if node, err := a.CallNode(ctx, "call-1"); err != nil || node != b.Node() {
			t.Fatalf("the claimed call's node is %q (%v), want the claimer's %q", node, err, b.Node())
		}
		if finish(a) {
			t.Fatal("the node a call was claimed from stored its outcome")
		}
		if !finish(b) || finish(b) {
			t.Fatal("the claimer could not end the call, or ended it twice")
		}
	})
}

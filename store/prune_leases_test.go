package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// PruneLeases deletes the leases that lapsed before its cutoff, never one
// still held (even with a cutoff in the future), and deleting a lapsed
// node lease changes neither which work is orphaned nor who may take the
// lease.
func TestPruneLeases(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		a, path := openStore(t)
		ctx := context.Background()
		start := time.Now()
		now := start
		clock := func() time.Time { return now }
		a.Now = clock
		b, err := store.Open(path, nil) // a second node
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Now = clock
		take := func(s *store.Store, name string, ttl time.Duration) bool {
			t.Helper()
			ok, err := s.TakeLease(ctx, name, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		prune := func(before time.Time) int64 {
			t.Helper()
			n, err := b.PruneLeases(ctx, before)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		take(a, store.NodeLease(a.Node()), 10*time.Second)
		take(b, "sweeper", time.Minute)
		run := store.NewRunRow("run-1", "", "", "fake", 5, 1, now)
		if err := a.Write(ctx, func(tx *store.Tx) error { return tx.InsertRun(&run) }); err != nil {
			t.Fatal(err)
		}
		if n := prune(now.Add(time.Hour)); n != 0 {
			t.Fatalf("pruned %d leases none of which has lapsed, want 0", n)
		}

		now = start.Add(11 * time.Second) // a's node lease lapses; the sweeper's lives
		before, err := b.OrphanedRuns(ctx)
		if err != nil || len(before) != 1 {
			t.Fatalf("orphaned runs %v (%v), want run-1", before, err)
		}
		if n := prune(start); n != 0 {
			t.Fatalf("pruned %d leases with a cutoff before any expired, want 0", n)
		}
		if n := prune(now.Add(time.Hour)); n != 1 {
			t.Fatalf("pruned %d leases, want 1: a's lapsed node lease, not the live sweeper lease", n)
		}
		if n := prune(now); n != 0 {
			t.Fatalf("pruned %d leases a second time, want 0", n)
		}
		after, err := b.OrphanedRuns(ctx)
		if err != nil || !slices.Equal(after, before) {
			t.Fatalf("orphaned runs after pruning %v (%v), want %v as before", after, err, before)
		}
		if take(a, "sweeper", time.Minute) {
			t.Fatal("the live sweeper lease was pruned: another node took it")
		}
		if !take(b, store.NodeLease(a.Node()), 10*time.Second) {
			t.Fatal("a pruned lease cannot be taken")
		}
	})
}

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestFailedCommitLeavesNoTransactionOpen: a COMMIT that fails can leave
// SQLite's transaction open (a deferred foreign key violation does, by
// design). The writer rolls it back, so the next batch begins normally
// instead of every later write failing with "cannot start a transaction
// within a transaction"; and nothing of the failed batch is kept.
func TestFailedCommitLeavesNoTransactionOpen(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "commit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	err = s.Write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
			return err
		}
		if err := tx.PutSetting("kept", "no"); err != nil {
			return err
		}
		_, err := tx.AppendEvent("no-such-session", "ping", "", []byte(`{}`), time.Now())
		return err
	})
	if err == nil {
		t.Fatal("a batch violating a deferred foreign key committed")
	}
	if err := s.Write(ctx, func(tx *Tx) error { return tx.PutSetting("after", "yes") }); err != nil {
		t.Fatalf("the write after a failed commit: %v", err)
	}
	if v, ok, err := s.Setting(ctx, "after"); err != nil || !ok || v != "yes" {
		t.Errorf("setting after = %q %v %v", v, ok, err)
	}
	if _, ok, err := s.Setting(ctx, "kept"); err != nil || ok {
		t.Errorf("the failed batch's setting was kept (%v, %v)", ok, err)
	}
}

// TestWritesKeepSubmissionOrder: an operation runs after every operation
// its goroutine submitted before it, in an earlier batch or earlier in the
// same one. Each goroutine hands a setting to WriteAsync, then reads it
// back inside a Write, which must see it.
func TestWritesKeepSubmissionOrder(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "order.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", g)
			for i := range 300 {
				want := strconv.Itoa(i)
				s.WriteAsync(func(tx *Tx) error { return tx.PutSetting(key, want) })
				err := s.Write(ctx, func(tx *Tx) error {
					var got string
					if err := tx.get(&got, qGetSetting, key); err != nil {
						return err
					}
					if got != want {
						return fmt.Errorf("%s = %s after the write of %s", key, got, want)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

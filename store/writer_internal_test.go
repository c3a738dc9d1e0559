package store

import (
	"context"
	"path/filepath"
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

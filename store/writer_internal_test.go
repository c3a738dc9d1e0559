package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
)

// openTestStore opens a store on a new file, closed when the test ends.
func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "toolgate.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFailedCommitLeavesNoTransactionOpen: a COMMIT that fails can leave
// SQLite's transaction open (a deferred foreign key violation does, by
// design). The writer rolls it back, so the next batch begins normally
// instead of every later write failing with "cannot start a transaction
// within a transaction"; and nothing of the failed batch is kept.
func TestFailedCommitLeavesNoTransactionOpen(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	var opDone bool // the operation itself succeeded: what failed is the COMMIT
	err := s.Write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
			return err
		}
		if err := tx.PutSetting("kept", "no"); err != nil {
			return err
		}
		_, err := tx.AppendEvent("no-such-session", "ping", "", []byte(`{}`), time.Now())
		opDone = err == nil
		return err
	})
	if err == nil || !opDone || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("want the COMMIT to fail on the deferred foreign key after the operation succeeded; got %v (operation succeeded: %v)", err, opDone)
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
	s := openTestStore(t)
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

// holdWriter keeps the writer busy until release is called, so that the
// operations submitted meanwhile queue up, in the order submitted, and
// share its next batch.
func holdWriter(s *Store) (release func()) {
	running, held := make(chan struct{}), make(chan struct{})
	go s.Write(context.Background(), func(tx *Tx) error { close(running); <-held; return nil })
	<-running
	return func() { close(held) }
}

// TestBrokenTransactionFailsTheBatch: when the batch is run again on
// savepoints (one operation failed) and an operation breaks the transaction
// itself — here by rolling all of it back — every operation of the batch
// fails, nothing of it is kept, and the next write begins normally.
func TestBrokenTransactionFailsTheBatch(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	// The three operations below queue up and share the next batch, in
	// this order.
	release := holdWriter(s)
	ops := []func(tx *Tx) error{
		func(tx *Tx) error { return tx.PutSetting("a", "1") },
		func(tx *Tx) error { return errors.New("refused") },
		func(tx *Tx) error { _, err := tx.exec(`ROLLBACK`); return err },
	}
	// Queued directly, in order: submit returns once an operation is in
	// the writer's queue.
	queued := make([]*writeOp, len(ops))
	for i, fn := range ops {
		queued[i] = &writeOp{fn: fn, result: make(chan error, 1)}
		if err := s.w.submit(ctx, queued[i]); err != nil {
			t.Fatal(err)
		}
	}
	release()
	for i, op := range queued {
		if err := <-op.result; err == nil {
			t.Errorf("operation %d succeeded in a broken transaction", i)
		}
	}
	if _, ok, err := s.Setting(ctx, "a"); err != nil || ok {
		t.Errorf("the broken batch's setting was kept (%v, %v)", ok, err)
	}
	if err := s.Write(ctx, func(tx *Tx) error { return tx.PutSetting("b", "1") }); err != nil {
		t.Fatalf("the write after a broken batch: %v", err)
	}
}

// TestWriteValueReturnsTheCommittedRun: an operation whose batch is rolled
// back (another operation of it failed) runs again, and WriteValue returns
// what the second run returned, which is what was committed, not what the
// first run returned.
func TestWriteValueReturnsTheCommittedRun(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	// The two operations below share the next batch, the value's first.
	release := holdWriter(s)
	runs := 0
	type result struct {
		value int
		err   error
	}
	got := make(chan result, 1)
	go func() {
		v, err := WriteValue(ctx, s, func(tx *Tx) (int, error) {
			runs++ // the writer's goroutine alone runs this
			return runs, tx.PutSetting("run", strconv.Itoa(runs))
		})
		got <- result{v, err}
	}()
	testwait.Until(t, 5*time.Second, "the value's operation queued", func() bool { return len(s.w.ops) > 0 })
	failing := &writeOp{fn: func(tx *Tx) error { return errors.New("refused") }, result: make(chan error, 1)}
	if err := s.w.submit(ctx, failing); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-failing.result; err == nil {
		t.Fatal("the failing operation succeeded")
	}
	r := <-got
	stored, _, err := s.Setting(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if r.err != nil || r.value != 2 || stored != "2" {
		t.Fatalf("WriteValue = %d, %v with %q stored; want the second run's 2, as stored", r.value, r.err, stored)
	}
}

// TestWriteValueErrorGivesZero: an operation that fails returns the zero
// value with its error, whatever it returned beside the error.
func TestWriteValueErrorGivesZero(t *testing.T) {
	s := openTestStore(t)
	errNo := errors.New("no")
	v, err := WriteValue(context.Background(), s, func(tx *Tx) (string, error) { return "partial", Refuse(errNo) })
	if v != "" || err != errNo {
		t.Fatalf("WriteValue = %q, %v; want \"\" and the refusal", v, err)
	}
}

package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/migrations"
	"github.com/toolgate/toolgate/store"
)

// openStore opens a store on a new database: a PostgreSQL one when the
// test runs under onBothBackends' "postgres", else a SQLite file. The
// target returned opens the same database again.
func openStore(t testing.TB) (*store.Store, string) {
	t.Helper()
	path := newTarget(t)
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func insertSession(t testing.TB, st *store.Store, id string) {
	t.Helper()
	now := time.Now()
	err := st.Write(context.Background(), func(tx *store.Tx) error {
		return tx.InsertSession(&store.SessionRow{ID: id, TokenHash: "hash-" + id, Metadata: "{}", CreatedAt: now.UnixMilli(), LastSeenAt: now.UnixMilli()})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitIsolatesFailures: operations submitted together share
// transactions, yet one operation's error undoes only its own writes and a
// panic is contained; every caller gets its own outcome.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "s")
		const n = 200
		errs := make([]error, n)
		var wg sync.WaitGroup
		tx0 := st.Transactions()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = st.Write(ctx, func(tx *store.Tx) error {
					row := store.NewCallRow(callID(i), "s", "echo", []byte(`{}`), toolgate.StatusPending, time.Minute, time.Now())
					if err := tx.InsertCall(&row); err != nil {
						return err
					}
					if _, err := tx.AppendEvent("s", toolgate.EventCallCancelled, callID(i), []byte(`{}`), time.Now()); err != nil {
						return err
					}
					switch i % 10 {
					case 3:
						return errors.New("refused") // its insert must be undone
					case 7:
						panic("bad operation")
					}
					return nil
				})
			}()
		}
		wg.Wait()
		txs := st.Transactions() - tx0
		for i, err := range errs {
			row, gerr := st.GetCall(ctx, callID(i))
			if gerr != nil {
				t.Fatal(gerr)
			}
			switch i % 10 {
			case 3, 7:
				if err == nil || row != nil {
					t.Errorf("op %d: err %v, row %v; want an error and no row", i, err, row)
				}
			default:
				if err != nil || row == nil {
					t.Errorf("op %d: err %v, row %v; want it stored", i, err, row)
				}
			}
		}
		if txs >= n && !onPostgres(t) { // no batches on PostgreSQL: one transaction per operation
			t.Errorf("%d operations took %d transactions: no grouping", n, txs)
		}
		// The table holds the committed operations' events only; the in-memory
		// tail, which serves a reader that keeps up, agrees with it.
		var fromTable []toolgate.Event
		for cursor := int64(0); ; {
			events, last, full, err := st.EventsAfter(ctx, "s", cursor, 50)
			if err != nil {
				t.Fatal(err)
			}
			fromTable = append(fromTable, events...)
			cursor = last
			if !full {
				break
			}
		}
		if want := n - 2*n/10; len(fromTable) != want {
			t.Fatalf("%d events stored, want %d", len(fromTable), want)
		}
		for _, ev := range fromTable {
			var i int
			fmt.Sscanf(ev.CallID, "call-%d", &i)
			if i%10 == 3 || i%10 == 7 {
				t.Errorf("event of rolled-back operation %d was stored", i)
			}
		}
		recent := fromTable[len(fromTable)-10:]
		fromTail, _, _, err := st.EventsAfter(ctx, "s", fromTable[len(fromTable)-11].Seq, 50)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(fromTail) != fmt.Sprint(recent) {
			t.Errorf("tail = %v\nwant %v", fromTail, recent)
		}
		t.Logf("%d operations in %d transactions", n, txs)
	})
}

func callID(i int) string { return fmt.Sprintf("call-%d", i) }

// TestReopenKeepsEverything: a closed store opens again with its data and
// applies no migration twice.
func TestReopenKeepsEverything(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, path := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "kept")
		if err := st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting("k", "v") }); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if err := st.Write(ctx, func(tx *store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
		again, err := store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		row, err := again.GetSession(ctx, "kept")
		if err != nil || row == nil {
			t.Fatalf("session after reopen: %v %v", row, err)
		}
		if v, ok, err := again.Setting(ctx, "k"); err != nil || !ok || v != "v" {
			t.Fatalf("setting after reopen: %q %v %v", v, ok, err)
		}
	})
}

// TestEventsAfterSkipsEndedRequests: the log leaves out requests for calls
// that have ended, yet the cursor moves past them — read from the
// in-memory tail while the store runs, and from the table after a reopen.
func TestEventsAfterSkipsEndedRequests(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, path := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "s")
		now := time.Now()
		err := st.Write(ctx, func(tx *store.Tx) error {
			for _, id := range []string{"a", "b"} {
				row := store.NewCallRow(id, "s", "echo", []byte(`{}`), toolgate.StatusPending, time.Minute, now)
				if err := tx.InsertCall(&row); err != nil {
					return err
				}
				if _, err := tx.AppendEvent("s", toolgate.EventToolCallRequest, id, []byte(`{"id":"`+id+`"}`), now); err != nil {
					return err
				}
			}
			_, err := tx.FinishCall("b", store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(`1`)}, now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		check := func(st *store.Store, from string) {
			t.Helper()
			events, last, full, err := st.EventsAfter(ctx, "s", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 || events[0].CallID != "a" || full {
				t.Fatalf("%s: events = %+v", from, events)
			}
			if last != events[0].Seq+1 {
				t.Fatalf("%s: last = %d, want past the skipped event (%d)", from, last, events[0].Seq+1)
			}
			if seq, err := st.LastEventSeq(ctx, "s"); err != nil || seq != last {
				t.Fatalf("%s: last event seq = %d %v, want %d", from, seq, err, last)
			}
		}
		check(st, "memory tail")
		st.Close()
		reopened, err := store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer reopened.Close()
		check(reopened, "table")
		if _, _, full, _ := reopened.EventsAfter(ctx, "s", 0, 1); !full {
			t.Fatal("a batch of one out of two should report full")
		}
	})
}

// TestRememberedFinalMatchesTable: the in-memory record of a call that just
// ended is the record the table holds — composed from the open row for a
// call this process stored (after deliveries, progress and an approval, in
// the same transaction or in earlier ones), read back for a call stored
// before a restart.
func TestRememberedFinalMatchesTable(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		path := newTarget(t)
		ctx := context.Background()
		now := time.Now()
		outcomes := map[string]store.Outcome{
			"ok":   {Status: toolgate.StatusCompleted, Output: []byte(`{"a":1}`)},
			"fail": {Status: toolgate.StatusFailed, ErrorCode: "AUTH_REQUIRED", ErrorMessage: "log in", ErrorDetails: []byte(`{"resolution_hint":"x"}`)},
			"null": {Status: toolgate.StatusCompleted, Output: []byte(`null`)},
		}
		write := func(st *store.Store, fn func(tx *store.Tx) error) {
			t.Helper()
			if err := st.Write(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		// prepare stores a call and changes it as a client and an operator would.
		prepare := func(tx *store.Tx, id string, approval bool) error {
			status := toolgate.StatusPending
			if approval {
				status = toolgate.StatusAwaitingApproval
			}
			row := store.NewCallRow(id, "s", "echo", []byte(`{"q":"x"}`), status, time.Minute, now)
			row.SetRunID("run-1")
			if err := tx.InsertCall(&row); err != nil {
				return err
			}
			if approval {
				if _, err := tx.ApproveCall(id, now.Add(3*time.Minute)); err != nil {
					return err
				}
			}
			if err := tx.MarkDelivered([]string{id}, now); err != nil {
				return err
			}
			_, err := tx.SetProgress(id, []byte(`{"pct":50}`), now.Add(2*time.Minute))
			return err
		}
		answer := func(tx *store.Tx, id string, o store.Outcome) error {
			ended, err := tx.FinishAnswered(id, "s", o, now.Add(time.Second), now.Add(time.Millisecond), 2)
			if err != nil || ended == nil {
				return fmt.Errorf("finish %s: %v %v", id, ended, err)
			}
			tx.RememberFinal(*ended)
			// Answered again: no longer open, whichever way the row is known.
			if again, err := tx.FinishAnswered(id, "s", o, now, now, 1); err != nil || again != nil {
				return fmt.Errorf("second answer to %s: %v %v", id, again, err)
			}
			return nil
		}
		memory := map[string]string{}
		remember := func(st *store.Store, id string) {
			r, err := st.GetCall(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r.Call())
			memory[id] = string(b)
		}

		st, err := store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		insertSession(t, st, "s")
		for id, o := range outcomes {
			// Composed: everything in one transaction, ...
			write(st, func(tx *store.Tx) error {
				if err := prepare(tx, id+"-one-tx", false); err != nil {
					return err
				}
				return answer(tx, id+"-one-tx", o)
			})
			// ... or in transactions of their own, with an approval.
			write(st, func(tx *store.Tx) error { return prepare(tx, id+"-approved", true) })
			write(st, func(tx *store.Tx) error { return answer(tx, id+"-approved", o) })
			// Read back: stored by a process that stopped.
			write(st, func(tx *store.Tx) error { return prepare(tx, id+"-restarted", false) })
			remember(st, id+"-one-tx")
			remember(st, id+"-approved")
		}
		st.Close()
		st, err = store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for id, o := range outcomes {
			write(st, func(tx *store.Tx) error { return answer(tx, id+"-restarted", o) })
			remember(st, id+"-restarted")
		}
		st.Close()
		reopened, err := store.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer reopened.Close()
		for id, mem := range memory {
			r, err := reopened.GetCall(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r.Call())
			if table := string(b); table != mem {
				t.Errorf("%s:\nmemory %s\ntable  %s", id, mem, table)
			}
		}
		if len(memory) != 3*len(outcomes) {
			t.Fatalf("%d records compared", len(memory))
		}
	})
}

// TestRateLimitCountsMarkedCalls: the rate-limit count sees the calls
// stored as RateLimited (of a built-in tool too), not the others, and reads
// them through the partial index rather than the session's whole history.
func TestRateLimitCountsMarkedCalls(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, path := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "s")
		now := time.Now()
		err := st.Write(ctx, func(tx *store.Tx) error {
			for i, c := range []struct {
				session, tool string
				limited       bool
				age           time.Duration
			}{
				{"s", "send", true, time.Minute},
				{"s", "send", true, 2 * time.Hour}, // before the window
				{"s", "send", false, time.Minute},  // made while the tool had no limit
				{"s", "other", true, time.Minute},
				{"", "send", true, time.Minute}, // a built-in of the same name
			} {
				row := store.NewCallRow(callID(i), c.session, c.tool, []byte(`{}`), toolgate.StatusPending, time.Minute, now.Add(-c.age))
				row.RateLimited = c.limited
				if err := tx.InsertCall(&row); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkRateCounts(t, st, now, []rateCount{{"s", "send", 1}, {"", "send", 1}})
		if onPostgres(t) {
			return // the plan below is SQLite's
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var id, parent, unused int
		var detail string
		err = db.QueryRow(`EXPLAIN QUERY PLAN SELECT created_at FROM calls WHERE session_id = ? AND tool = ? AND created_at >= ? AND rate_limited IS NOT NULL ORDER BY created_at`,
			"s", "send", 0).Scan(&id, &parent, &unused, &detail)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(detail, "calls_rate_limited") {
			t.Errorf("the count does not use calls_rate_limited: %s", detail)
		}
	})
}

// TestUpgradeKeepsRateLimitCounts: a database made before migration 0004
// (no rate_limited column) is upgraded with the last hour's calls to
// limited tools, and to built-in tools, still counted; other calls are not.
func TestUpgradeKeepsRateLimitCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`)
	for _, name := range []string{"0001_init.sql", "0002_runs.sql", "0003_lighter_call_indexes.sql"} {
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(string(body))
		mustExec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, 0)`, name)
	}
	now := time.Now()
	recent, old := now.Add(-time.Minute).UnixMilli(), now.Add(-2*time.Hour).UnixMilli()
	mustExec(`INSERT INTO sessions (id, token_hash, created_at, last_seen_at) VALUES ('s', 'h', 0, 0)`)
	mustExec(`INSERT INTO tools (session_id, name, description, parameters, rate_per_minute, registered_at)
		VALUES ('s', 'limited', 'd', '{}', 2, 0), ('s', 'free', 'd', '{}', 0, 0)`)
	insertOld := `INSERT INTO calls (id, session_id, tool, args, status, timeout_ms, created_at, deadline) VALUES (?, ?, ?, '{}', 'completed', 1000, ?, 0)`
	mustExec(insertOld, "a", "s", "limited", recent)
	mustExec(insertOld, "b", "s", "limited", old)
	mustExec(insertOld, "c", "s", "free", recent)
	mustExec(insertOld, "d", nil, "current_time", recent)
	db.Close()

	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkRateCounts(t, st, now, []rateCount{{"s", "limited", 1}, {"s", "free", 0}, {"", "current_time", 1}})
}

// rateCount is how many calls of a tool in a session (empty: a built-in)
// a rate limit should count in the last hour.
type rateCount struct {
	session, tool string
	want          int
}

// checkRateCounts reads, in a write transaction as the engine does, how
// many calls each rate limit counts in the hour before now.
func checkRateCounts(t *testing.T, st *store.Store, now time.Time, counts []rateCount) {
	t.Helper()
	err := st.Write(context.Background(), func(tx *store.Tx) error {
		for _, c := range counts {
			got, err := tx.RecentCallTimes(c.session, c.tool, now.Add(-time.Hour))
			if err != nil {
				return err
			}
			if len(got) != c.want {
				t.Errorf("session %q, tool %s: %d calls counted, want %d", c.session, c.tool, len(got), c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRefusalsRunOnce: operations that refuse before writing (store.Refuse)
// fail alone without their batch being rolled back and run again: every
// operation runs exactly once, the others commit, and each refusal reaches
// its caller unwrapped.
func TestRefusalsRunOnce(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		errLimited := errors.New("limited")
		const n = 300
		var runs atomic.Int64
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = st.Write(ctx, func(tx *store.Tx) error {
					runs.Add(1)
					if i%3 == 0 {
						return store.Refuse(errLimited)
					}
					return tx.PutSetting(fmt.Sprintf("k%d", i), "v")
				})
			})
		}
		wg.Wait()
		if got := runs.Load(); got != n {
			t.Errorf("operations ran %d times, want %d (no batch run twice)", got, n)
		}
		for i, err := range errs {
			if i%3 == 0 {
				if err != errLimited {
					t.Errorf("op %d: %v, want the refusal itself", i, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("op %d: %v", i, err)
			}
			if _, ok, err := st.Setting(ctx, fmt.Sprintf("k%d", i)); !ok || err != nil {
				t.Errorf("op %d not committed: %v", i, err)
			}
		}
	})
}

// TestDuplicateIdempotencyKeyIsTyped: a second call with a key another call
// holds fails with ErrDuplicateIdempotencyKey (found with errors.Is, not by
// its text) and is not stored; a clash of call ids is another error.
func TestDuplicateIdempotencyKeyIsTyped(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		insertSession(t, st, "s")
		insert := func(id, key string) error {
			return st.Write(ctx, func(tx *store.Tx) error {
				row := store.NewCallRow(id, "s", "echo", []byte(`{}`), toolgate.StatusPending, time.Minute, time.Now())
				row.SetIdempotencyKey(key)
				return tx.InsertCall(&row)
			})
		}
		if err := insert("call-1", "key-1"); err != nil {
			t.Fatal(err)
		}
		err := insert("call-2", "key-1")
		if !errors.Is(err, store.ErrDuplicateIdempotencyKey) {
			t.Fatalf("second call with the same key: %v, want ErrDuplicateIdempotencyKey", err)
		}
		if row, err := st.GetCall(ctx, "call-2"); err != nil || row != nil {
			t.Errorf("the refused call was stored: %+v %v", row, err)
		}
		err = insert("call-1", "key-2")
		if err == nil || errors.Is(err, store.ErrDuplicateIdempotencyKey) {
			t.Errorf("a second call-1 with a new key: %v, want an error other than a duplicate key", err)
		}
	})
}

package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// twoNodes opens two stores on one new PostgreSQL database: two nodes.
func twoNodes(t *testing.T) (a, b *store.Store, url string) {
	t.Helper()
	url = pg.Server(t).NewDatabase(t)
	open := func() *store.Store {
		st, err := store.Open(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if !st.Shared() {
			t.Fatal("a store on PostgreSQL is not Shared")
		}
		return st
	}
	return open(), open(), url
}

// Events appended to one session from two nodes at once get the cursors
// 1..N with none missing, and a reader polling while they commit never
// moves past an event it has not seen.
func TestPostgresEventCursorsAreDenseAcrossNodes(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	insertSession(t, a, "s")
	const writers, each = 8, 40
	done := make(chan struct{})
	readerErr := make(chan error, 1)
	var seen []int64
	go func() {
		var cursor int64
		poll := func() error {
			events, last, _, err := b.EventsAfter(ctx, "s", cursor, 1000)
			if err != nil {
				return err
			}
			for _, ev := range events {
				if ev.Seq != cursor+1 {
					return fmt.Errorf("after cursor %d the reader got %d", cursor, ev.Seq)
				}
				cursor = ev.Seq
				seen = append(seen, ev.Seq)
			}
			if last != cursor {
				return fmt.Errorf("last %d, cursor %d", last, cursor)
			}
			return nil
		}
		for {
			select {
			case <-done:
				readerErr <- poll()
				return
			default:
			}
			if err := poll(); err != nil {
				readerErr <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		st := a
		if w%2 == 1 {
			st = b
		}
		wg.Go(func() {
			for i := range each {
				err := st.Write(ctx, func(tx *store.Tx) error {
					_, err := tx.AppendEvent("s", toolgate.EventCallCancelled, "", []byte(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), time.Now())
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("the reader saw %d events, want %d", len(seen), writers*each)
	}
	if last, err := a.LastEventSeq(ctx, "s"); err != nil || last != writers*each {
		t.Fatalf("last event seq %d %v, want %d", last, err, writers*each)
	}
	if _, last, err := a.OpenRequests(ctx, "s", time.Now()); err != nil || last != writers*each {
		t.Fatalf("open requests: last event seq %d %v, want %d", last, err, writers*each)
	}
}

// The same call answered on two nodes at once ends once: exactly one
// answer wins.
func TestPostgresOneAnswerWinsAcrossNodes(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	insertSession(t, a, "s")
	const calls = 30
	insertCalls(t, a, "s", calls, toolgate.StatusDelivered)
	for i := range calls {
		var wins atomic.Int64
		var wg sync.WaitGroup
		for n, st := range []*store.Store{a, b} {
			wg.Go(func() {
				ended, err := store.WriteValue(ctx, st, func(tx *store.Tx) (*store.CallRow, error) {
					return tx.FinishAnswered(callID(i), "s", store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(fmt.Sprint(n))}, time.Now(), time.Now(), 1)
				})
				if err != nil {
					t.Error(err)
				}
				if ended != nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if got := wins.Load(); got != 1 {
			t.Fatalf("call %d: %d answers won, want 1", i, got)
		}
		row, err := b.GetCall(ctx, callID(i))
		if err != nil || row == nil || row.Status != string(toolgate.StatusCompleted) || row.Attempts != 1 {
			t.Fatalf("call %d after the answers: %+v %v", i, row, err)
		}
	}
}

// Four nodes starting at once on a new database all open it; each
// migration is applied once.
func TestPostgresNodesStartingTogether(t *testing.T) {
	url := pg.Server(t).NewDatabase(t)
	const nodes = 4
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			st, err := store.Open(url, nil)
			if err == nil {
				err = st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: %v", i, err)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var applied, distinct int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT name) FROM schema_migrations`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied == 0 || applied != distinct {
		t.Fatalf("%d migrations recorded, %d distinct", applied, distinct)
	}
}

// A change committed on one node reaches the other's OnChanges; when the
// other's connections are cut, its listener comes back and tells
// ChangeResync.
func TestPostgresChangesReachTheOtherNode(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	if a.ApplicationName() == b.ApplicationName() || !strings.HasPrefix(a.ApplicationName(), "toolgate-"+a.Node()[:8]) {
		t.Fatalf("application names %q and %q", a.ApplicationName(), b.ApplicationName())
	}
	heard := make(chan store.Change, 1000)
	b.ResyncEvery = time.Hour // only the reconnects resync in this test
	b.OnChanges(func(changes []store.Change) {
		for _, c := range changes {
			heard <- c
		}
	})
	await := func(want store.Change) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case c := <-heard:
				if c == want {
					return
				}
			case <-deadline:
				t.Fatalf("%v never reached the other node", want)
			}
		}
	}
	await(store.Change{Kind: store.ChangeResync}) // listening

	insertSession(t, a, "s")
	now := time.Now()
	if err := a.Write(ctx, func(tx *store.Tx) error {
		row := store.NewCallRow("c1", "s", "echo", []byte(`{}`), toolgate.StatusPending, time.Minute, now)
		if err := tx.InsertCall(&row); err != nil {
			return err
		}
		if _, err := tx.AppendEvent("s", toolgate.EventToolCallRequest, "c1", []byte(`{}`), now); err != nil {
			return err
		}
		_, err := tx.FinishCall("c1", store.Outcome{Status: toolgate.StatusCancelled}, now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	await(store.Change{Kind: store.ChangeSession, ID: "s"})
	await(store.Change{Kind: store.ChangeEvents, ID: "s"})
	await(store.Change{Kind: store.ChangeCall, ID: "c1"})
	// A rolled-back operation tells nobody.
	_ = a.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.AppendEvent("s", toolgate.EventCallCancelled, "", []byte(`{}`), now); err != nil {
			return err
		}
		return fmt.Errorf("undone")
	})

	n, err := pg.Server(t).CutConnections(ctx, b.ApplicationName())
	if err != nil || n == 0 {
		t.Fatalf("cut %d connections (%v)", n, err)
	}
	await(store.Change{Kind: store.ChangeResync})
	// The node still writes, and still hears.
	insertSession(t, b, "s2")
	insertSession(t, a, "s3")
	await(store.Change{Kind: store.ChangeSession, ID: "s3"})
	for len(heard) > 0 {
		if c := <-heard; c.Kind == store.ChangeEvents || c.ID == "s2" {
			t.Fatalf("the other node heard %v: a rolled-back change, or its own", c)
		}
	}
}

// A rate limit counted on two nodes at once lets exactly the limit
// through.
func TestPostgresRateLimitAcrossNodes(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	insertSession(t, a, "s")
	const limit, tries = 5, 40
	limited := fmt.Errorf("limited")
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range tries {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			now := time.Now()
			err := st.Write(ctx, func(tx *store.Tx) error {
				recent, err := tx.RecentCallTimes("s", "send", now.Add(-time.Minute))
				if err != nil {
					return err
				}
				if len(recent) >= limit {
					return store.Refuse(limited)
				}
				row := store.NewCallRow(callID(i), "s", "send", []byte(`{}`), toolgate.StatusPending, time.Minute, now)
				row.RateLimited = true
				return tx.InsertCall(&row)
			})
			switch err {
			case nil:
				admitted.Add(1)
			case limited:
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != limit {
		t.Fatalf("%d calls admitted under a limit of %d", got, limit)
	}
}

// insertCalls stores n calls of session sid in one status, named callID(i).
func insertCalls(t *testing.T, st *store.Store, sid string, n int, status toolgate.CallStatus) {
	t.Helper()
	now := time.Now()
	err := st.Write(context.Background(), func(tx *store.Tx) error {
		for i := range n {
			row := store.NewCallRow(callID(i), sid, "echo", []byte(`{}`), status, time.Minute, now)
			if err := tx.InsertCall(&row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

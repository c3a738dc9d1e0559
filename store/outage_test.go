package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/pgtest"
	"github.com/toolgate/toolgate/store"
)

// wantUnavailable fails the test unless err is ErrUnavailable carrying a
// STORAGE_UNAVAILABLE error that asks to retry after a second.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	var te *toolgate.Error
	if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &te) || te.Code != toolgate.EStorageUnavailable || te.RetryAfterSeconds != 1 {
		t.Fatalf("%s: %v (code %s), want ErrUnavailable with %s and Retry-After 1", what, err, toolgate.ErrorCode(err), toolgate.EStorageUnavailable)
	}
}

// lockSession holds session id's row locked (SELECT ... FOR UPDATE in an
// open transaction) from a connection of its own, until the test ends or
// the returned function releases it.
func lockSession(t *testing.T, url, id string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// touch is a write of session id's row.
func touch(st *store.Store, id string) error {
	return st.Write(context.Background(), func(tx *store.Tx) error {
		return tx.TouchSession(id, time.Now().Add(time.Hour))
	})
}

// A write of a row another connection holds locked fails within the lock
// timeout with ErrUnavailable instead of waiting for the lock: 300 ms when
// the URL says lock_timeout, 5 s by default. Once the lock is released
// the same write succeeds.
func TestPostgresLockedRowFailsWithinLockTimeout(t *testing.T) {
	url := pg.Server(t).NewDatabase(t)
	short, err := store.Open(url+"&lock_timeout=300ms", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	insertSession(t, short, "s")
	release := lockSession(t, url, "s")

	began := time.Now()
	err = touch(short, "s")
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("a write of a locked row took %v with lock_timeout=300ms", took)
	}
	wantUnavailable(t, "a write of a locked row", err)

	byDefault, err := store.Open(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer byDefault.Close()
	began = time.Now()
	err = touch(byDefault, "s")
	if took := time.Since(began); took < 4*time.Second || took > 15*time.Second {
		t.Fatalf("a write of a locked row failed after %v (%v), want about the default lock_timeout of 5 s", took, err)
	}
	wantUnavailable(t, "a write of a locked row, default lock_timeout", err)

	// Reads are not blocked by the lock.
	if row, err := short.GetSession(context.Background(), "s"); err != nil || row == nil {
		t.Fatalf("read a locked session: %v %v", row, err)
	}
	release()
	if err := touch(short, "s"); err != nil {
		t.Fatalf("the write once the lock was released: %v", err)
	}
}

// Close does not wait for ever on a write that waits for ever (no lock or
// statement timeout at all): after its grace it ends the write, which
// fails with ErrUnavailable.
func TestPostgresCloseEndsAStuckWrite(t *testing.T) {
	url := pg.Server(t).NewDatabase(t)
	st, err := store.Open(url+"&lock_timeout=0&statement_timeout=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	insertSession(t, st, "s")
	lockSession(t, url, "s")
	written := make(chan error, 1)
	go func() { written <- touch(st, "s") }()
	time.Sleep(500 * time.Millisecond) // the write waits for the lock
	select {
	case err := <-written:
		t.Fatalf("a write of a locked row without lock_timeout ended: %v", err)
	default:
	}
	began := time.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Fatalf("Close took %v with a write stuck on a lock", took)
	}
	wantUnavailable(t, "a write ended by Close", <-written)
}

// While the database server is stopped, reads and writes fail at once
// with ErrUnavailable (not an internal error, not a hang); once it is back
// they succeed again without reopening the store.
func TestPostgresOutage(t *testing.T) {
	srv := pgtest.For(t, pgtest.Options{})
	st, err := store.Open(srv.NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	insertSession(t, st, "s")
	insert := func(id string) error {
		now := time.Now()
		return st.Write(ctx, func(tx *store.Tx) error {
			return tx.InsertSession(&store.SessionRow{ID: id, TokenHash: "hash-" + id, Metadata: "{}", CreatedAt: now.UnixMilli(), LastSeenAt: now.UnixMilli()})
		})
	}

	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume() // for the database's cleanup
		}
	}()
	began := time.Now()
	_, err = st.GetSession(ctx, "s")
	wantUnavailable(t, "a read (get) with the database stopped", err)
	_, err = st.OpenSessions(ctx)
	wantUnavailable(t, "a read (select) with the database stopped", err)
	_, _, _, err = st.EventsAfter(ctx, "s", 0, 10)
	wantUnavailable(t, "a read (rows) with the database stopped", err)
	_, _, err = st.OpenRequests(ctx, "s", time.Now())
	wantUnavailable(t, "a read (snapshot) with the database stopped", err)
	wantUnavailable(t, "a write with the database stopped", insert("t"))
	wantUnavailable(t, "a write of an existing row with the database stopped", touch(st, "s"))
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the reads and writes with the database stopped took %v", took)
	}

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := insert("t"); err != nil {
		t.Fatalf("the first write once the database is back: %v", err)
	}
	if row, err := st.GetSession(ctx, "t"); err != nil || row == nil {
		t.Fatalf("a read once the database is back: %v %v", row, err)
	}
	if rows, err := st.OpenSessions(ctx); err != nil || len(rows) != 2 {
		t.Fatalf("open sessions once the database is back: %d (%v), want 2", len(rows), err)
	}
	if _, _, _, err := st.EventsAfter(ctx, "s", 0, 10); err != nil {
		t.Fatalf("events once the database is back: %v", err)
	}
}

// Text PostgreSQL refuses in a TEXT column (a NUL character, bytes that
// are not UTF-8) is a BAD_REQUEST, in a write and in a read, not an
// internal error; the store stays usable.
func TestPostgresUnstorableTextIsABadRequest(t *testing.T) {
	st, err := store.Open(pg.Server(t).NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	wantBadRequest := func(what string, err error) {
		t.Helper()
		if toolgate.ErrorCode(err) != toolgate.EBadRequest || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("%s: %v (code %s), want %s", what, err, toolgate.ErrorCode(err), toolgate.EBadRequest)
		}
		if msg := toolgate.ErrorMessage(err); msg != "text holds a character the database refuses (NUL or invalid UTF-8)" {
			t.Fatalf("%s: message %q", what, msg)
		}
	}
	now := time.Now().UnixMilli()
	err = st.Write(ctx, func(tx *store.Tx) error {
		return tx.InsertSession(&store.SessionRow{ID: "s", TokenHash: "h", ClientName: "a\x00b", Metadata: "{}", CreatedAt: now, LastSeenAt: now})
	})
	wantBadRequest("a session whose client name holds NUL", err)
	_, err = st.GetSession(ctx, "a\x00b")
	wantBadRequest("a read of a session id holding NUL", err)
	_, err = st.ListTools(ctx, "a\xffb")
	wantBadRequest("a read of a session id that is not UTF-8", err)
	insertSession(t, st, "s")
	if row, err := st.GetSession(ctx, "s"); err != nil || row == nil {
		t.Fatalf("a read after the refusals: %v %v", row, err)
	}
}

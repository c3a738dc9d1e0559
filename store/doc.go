// Package store keeps toolgate's state — sessions, their tools, calls,
// runs and the per-session event log — in SQLite through sqlx on
// modernc.org/sqlite (pure Go, no cgo), or in PostgreSQL through sqlx on
// pgx's database/sql driver, where several nodes share the database
// ([Open] picks by its target; postgres.go and notify.go hold what only
// PostgreSQL runs). Both run the same queries, written with ? and
// rebound to $1, $2, ... for PostgreSQL; the migrations are per dialect
// (package migrations).
//
// On SQLite, writes go through one writer goroutine that groups the
// operations waiting for it into one transaction (group commit), so many
// small state changes cost one fsync-free WAL commit between them; each
// operation still gets its own result, and a failing operation is rolled
// back to its savepoint without disturbing the others in the batch. Reads
// use a separate read-only pool, which WAL mode lets run beside the writer.
//
// # The write contract
//
// An operation is a closure handed to [Store.Write], [WriteValue] or
// [Store.WriteAsync]. On SQLite it runs on the writer goroutine, in a
// transaction it may share with other operations, and it must keep these
// rules:
//
//   - It may run more than once. When another operation of its batch fails,
//     the whole batch is rolled back and run again, each operation on its
//     own savepoint. So whatever the closure records outside tx it must set,
//     not accumulate: reset a captured slice (list = list[:0]) or counter at
//     its start, never append to one filled by a run that was rolled back.
//     Better, return the result through [WriteValue], which hands back only
//     what the run that committed returned.
//   - It does all its work through tx, and nothing outside tx that cannot be
//     undone: its writes may yet be rolled back (its own error undoes its
//     part; a failed commit undoes the batch). Tell anyone else (wake a
//     stream, close a channel) after Write returns nil.
//   - [Refuse] marks an error returned before the operation wrote anything
//     (a rate limit reached, a call no longer open): the batch then goes on
//     without a second run. An error returned after any write must not be
//     marked, or that write would be committed with the batch.
//   - A constraint of the schema that refuses a write comes back as a typed
//     error (see [ErrDuplicateIdempotencyKey]); nobody above the store
//     matches an error's text.
//
// On PostgreSQL there is no writer goroutine and no batch: each operation
// runs in a transaction of its own (READ COMMITTED) on the caller's
// goroutine, and runs again when PostgreSQL gives the transaction up (a
// serialization failure or a deadlock): the rules above hold as they are.
// Once committed, the [Change]s its primitives noted are told to the
// other nodes ([Store.OnChanges]).
//
// # The caches kept at commit
//
// (SQLite only: on PostgreSQL other nodes change the tables, so the three
// caches stay empty and every read goes to the database.)
//
// Three in-memory copies of the tables spare the hot path a query: the
// event tail (each session's newest events, tail.go), the recent finals
// (records of calls that just ended, finals.go) and the open rows (rows of
// the open calls this process stored, openrows.go). Each write primitive of
// [Tx] notes what it changed, and the writer applies those notes only once
// the transaction has committed, in commit order, dropping the notes of an
// operation rolled back to its savepoint. So the caches never show an
// uncommitted change. For them to stay true, callers must:
//
//   - change the database only through [Tx]'s methods, inside an operation,
//     and through one [Store] per database file (the tail assumes every
//     event was appended by this process's one writer);
//   - give [Tx.RememberFinal] exactly the record as it now stands in the
//     table (as [Tx.FinishAnswered] returns it), never one composed by hand;
//   - treat the rows a read returns as their own copies, which they are:
//     changing one changes no cache.
package store

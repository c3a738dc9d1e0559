package store

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// The writer's transactions are run by prepared statements on its own
// connection rather than database/sql's Tx, which parses BEGIN and COMMIT
// again for every transaction and starts a goroutine to watch each one's
// context: a large part of the cost of the smallest transaction (the
// figure is in BENCHMARKS.md, "Figures behind design choices in the code").
var (
	qBegin    = query(`BEGIN IMMEDIATE`) // the write lock up front: no SQLITE_BUSY half-way
	qCommit   = query(`COMMIT`)
	qRollback = query(`ROLLBACK`)
)

// Savepoints let one operation of a batch fail alone.
var (
	qSavepoint  = query(`SAVEPOINT op`)
	qRollbackTo = query(`ROLLBACK TO op`)
	qRelease    = query(`RELEASE op`)
)

// maxBatch bounds how many operations share one transaction, so a burst
// cannot hold the write lock (and the waiting callers) for long.
const maxBatch = 256

// smallBatch is the size under which the writer yields its processor once
// before committing. Under load, the callers and handlers whose operations
// would come next are runnable but not yet running (the processors are
// busy), and a commit taken at once carries one or two operations; a
// commit costs about as much CPU as the statements of several operations,
// so on a busy machine committing smaller batches more often slows every
// call. When nothing else is runnable the yield returns at once, so one
// call at a time waits no longer.
const smallBatch = 8

// Tx is a write transaction handed to an operation. Its methods are the
// store's write primitives; an operation composes them.
type Tx struct {
	conn    *sqlx.Conn      // the writer's connection, inside BEGIN (SQLite)
	pg      *sqlx.Tx        // the operation's own transaction (PostgreSQL)
	ctx     context.Context // bounds pg's statements (the attempt's)
	prep    *prepared
	rows    openRows    // the open calls' rows as committed
	changes tailChanges // what the event tail learns once this commits
	node    string      // the store's node id, for the rows that name it
}

// sqliteWriter is the SQLite store's single writer: one goroutine (run)
// commits the operations handed to it (submit) in batches, on a
// connection of its own, and tells the caches what each commit changed.
type sqliteWriter struct {
	db   *sqlx.DB   // exactly one connection: SQLite has one writer anyway
	conn *sqlx.Conn // that connection, held from Open to Close
	prep *prepared  // statements prepared on it

	mu     sync.RWMutex // guards closed against sends on ops
	closed bool
	ops    chan *writeOp
	done   chan struct{} // closed when run has returned
	// quiet carries a checkpoint for the writer to run between two
	// batches, when the WAL has grown long (checkpoint.go).
	quiet chan func()

	tail   *eventTail    // told what each commit appended
	finals *recentFinals // told the calls each commit ended
	// rows are the rows of open calls this process stored; run's alone.
	rows openRows

	node  string // the store's node id, for the rows that name it
	stats *writeStats
	log   *slog.Logger
	now   func() time.Time
}

// writeStats counts the write transactions and the operations they
// carried, for Store.Transactions and Store.Operations.
type writeStats struct {
	transactions atomic.Int64
	operations   atomic.Int64
}

// writeOp is one operation waiting for the writer.
type writeOp struct {
	fn     func(tx *Tx) error
	result chan error // nil for an operation nobody waits on
}

// Write runs fn in a write transaction and returns once that transaction is
// committed (nil) or fn's work is rolled back (its error). fn follows the
// write contract of the package doc: it may run more than once and shares
// its transaction with other operations. To hand a result out of fn, use
// WriteValue rather than a captured variable.
//
// Write waits for the outcome even when ctx ends after the operation was
// handed over, so a caller never reports failure for a change that committed.
func (s *Store) Write(ctx context.Context, fn func(tx *Tx) error) error {
	if s.pg != nil {
		return s.pg.write(ctx, fn)
	}
	op := &writeOp{fn: fn, result: make(chan error, 1)}
	if err := s.w.submit(ctx, op); err != nil {
		return err
	}
	return <-op.result
}

// WriteValue is Write for an operation that produces a value: it returns
// what fn returned in the run that committed (fn may run more than once,
// and only the last run is the one committed), or the zero value and the
// error when fn's work was rolled back. (A function rather than a method:
// Go methods take no type parameters.)
func WriteValue[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	var committed T
	err := s.Write(ctx, func(tx *Tx) error {
		v, err := fn(tx)
		committed = v // each run replaces the last one's
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return committed, nil
}

// WriteAsync hands fn to the writer without waiting; an error is logged.
// It is for bookkeeping nobody is told about (such as marking calls
// delivered), where the writer's batching should absorb the cost. (On
// PostgreSQL, where there is no single writer, fn runs on a goroutine of
// its own.)
func (s *Store) WriteAsync(fn func(tx *Tx) error) {
	if s.pg != nil {
		s.pg.writeAsync(fn)
		return
	}
	_ = s.w.submit(context.Background(), &writeOp{fn: fn})
}

// submit hands op to the writer; ErrClosed once it stopped.
func (w *sqliteWriter) submit(ctx context.Context, op *writeOp) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	select {
	case w.ops <- op:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the single writer: it takes every operation already waiting
// (up to maxBatch; yielding once first while the batch is small) and
// commits them together. Between batches it runs the checkpoint handed to
// it when the WAL has grown long (checkpoint.go).
func (w *sqliteWriter) run() {
	defer close(w.done)
	batch := make([]*writeOp, 0, maxBatch)
	for {
		var op *writeOp
		select {
		case quiet := <-w.quiet:
			quiet()
			continue
		case next, ok := <-w.ops:
			if !ok {
				return
			}
			op = next
		}
		batch = append(batch[:0], op)
		yielded := false
	drain:
		for len(batch) < maxBatch {
			select {
			case next, ok := <-w.ops:
				if !ok {
					break drain
				}
				batch = append(batch, next)
			default:
				if !yielded && len(batch) < smallBatch {
					// Let the goroutines that are about to submit run
					// first, and take their operations into this commit.
					yielded = true
					runtime.Gosched()
					continue
				}
				break drain
			}
		}
		w.commitBatch(batch)
	}
}

// stop stops taking operations, waits for run to commit those already
// submitted and return, and reports whether this call stopped it (false
// when it had stopped already).
func (w *sqliteWriter) stop() bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.closed = true
	close(w.ops)
	w.mu.Unlock()
	<-w.done
	return true
}

// commitBatch runs the operations in one transaction. It first runs them
// one after another with nothing between them, which is what nearly every
// batch needs. Should one fail, that attempt is rolled back and the batch
// runs again with each operation inside a savepoint, so that the failing
// one undoes only its own writes. (A savepoint for every operation up front
// would cost two statements each and a copy of every page an operation
// touches that an earlier one of the batch had already changed.) An
// operation that refused before writing (see Refuse) fails alone in either
// pass, without a second one.
func (w *sqliteWriter) commitBatch(batch []*writeOp) {
	w.stats.transactions.Add(1)
	w.stats.operations.Add(int64(len(batch)))
	errs := make([]error, len(batch))
	finish := func(commitErr error) {
		for i, op := range batch {
			err := errs[i]
			if err == nil {
				err = commitErr
			}
			// A full disk is told as such (ErrStorageFull), not as SQLite's error.
			err = storageFullAs(err)
			if op.result != nil {
				op.result <- err
			} else if err != nil {
				w.log.Error("store: background write failed", "err", err)
			}
		}
	}
	failAll := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		finish(nil)
	}
	tx, err := w.begin()
	if err != nil {
		failAll(err)
		return
	}
	failed := -1
	for i, op := range batch {
		mark := tx.changes.len()
		errs[i] = runOp(op, tx, w.log)
		if r, ok := errs[i].(refusal); ok {
			errs[i] = r.err // nothing written: nothing to undo
			tx.changes.truncate(mark)
			continue
		}
		if errs[i] != nil {
			failed = i
			break
		}
	}
	if failed < 0 {
		finish(w.commit(tx))
		return
	}
	w.rollback(tx)
	if len(batch) == 1 {
		finish(nil)
		return
	}
	// Again, each operation on its own savepoint.
	clear(errs)
	if tx, err = w.begin(); err != nil {
		failAll(err)
		return
	}
	for i, op := range batch {
		if _, err := tx.exec(qSavepoint); err != nil {
			errs[i] = err
			continue
		}
		mark := tx.changes.len()
		errs[i] = runOp(op, tx, w.log)
		if r, ok := errs[i].(refusal); ok {
			errs[i] = r.err
		}
		if errs[i] != nil {
			tx.changes.truncate(mark)
			if _, err := tx.exec(qRollbackTo); err != nil {
				// The transaction is unusable; fail every operation.
				w.rollback(tx)
				failAll(err)
				return
			}
		}
		if _, err := tx.exec(qRelease); err != nil {
			// The operation's writes could not be told apart from the
			// batch's any more; fail every operation.
			w.rollback(tx)
			failAll(err)
			return
		}
	}
	finish(w.commit(tx))
}

// begin starts the writer's transaction.
func (w *sqliteWriter) begin() (*Tx, error) {
	tx := &Tx{conn: w.conn, prep: w.prep, rows: w.rows, node: w.node}
	if _, err := tx.exec(qBegin); err != nil {
		return nil, err
	}
	return tx, nil
}

// rollback undoes tx, the writer's transaction. Its error is not
// reported: after a failed statement SQLite may have rolled back already,
// and then there is nothing left to undo.
func (w *sqliteWriter) rollback(tx *Tx) { tx.exec(qRollback) }

// commit commits tx and, only once committed, tells the event tail, the
// recent finals and the open rows what it changed. A commit that fails is
// rolled back, so the connection is never left inside a transaction.
func (w *sqliteWriter) commit(tx *Tx) error {
	if _, err := tx.exec(qCommit); err != nil {
		w.rollback(tx)
		return err
	}
	w.tail.apply(&tx.changes, w.now())
	w.finals.put(tx.changes.finals)
	w.rows.apply(tx.changes.rows.list)
	return nil
}

// Refuse marks err as an operation's refusal made before it wrote anything
// (a rate limit reached, a call no longer open): its batch goes on without
// being rolled back and run again. An error returned after a write must not
// be marked, or that write would be committed.
func Refuse(err error) error {
	if err == nil {
		return nil
	}
	return refusal{err}
}

// refusal is an error an operation returned before writing anything.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// runOp runs one operation, turning a panic into an error so that one bad
// operation cannot take the writer down.
func runOp(op *writeOp, tx *Tx, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("store: write operation panicked", "panic", r)
			err = errPanic
		}
	}()
	return op.fn(tx)
}

type panicError struct{}

func (panicError) Error() string { return "store: write operation panicked" }

var errPanic error = panicError{}

package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/migrations"
)

// PostgreSQL: several nodes share one database, so what the SQLite store
// owns alone in its process is left to the database here.
//
//   - No single writer: each Write runs its operation in a transaction of
//     its own on the pool (READ COMMITTED), from the caller's goroutine;
//     other nodes write at the same time anyway. An operation PostgreSQL
//     gives up (serialization failure, deadlock) runs again, as the write
//     contract allows.
//   - No caches: the event tail, the recent finals and the open rows would
//     miss what other nodes commit, so reads go to the tables.
//   - Every committed operation's Changes are told to the other nodes with
//     NOTIFY, and theirs are heard with LISTEN (notify.go).
//   - Bounded waits: a row another transaction holds locked, a server that
//     stopped answering or a network that drops packets must fail a
//     request (ErrUnavailable, 503), not hang it and everything queued
//     behind it. Each connection says lock_timeout and statement_timeout
//     (unless the URL does), and each write attempt and read has a time
//     limit of its own, which also covers waiting for a connection of the
//     pool and a network that never answers.
//
// The queries are the SQLite ones, their ? placeholders rebound to $n
// (dollar); where the dialects differ the store picks a variant by s.pg.

// postgresMaxConns bounds a node's pool: reads and write transactions
// (one per operation running) share it; the listening connection is
// outside it. Three nodes stay under PostgreSQL's default 100.
const postgresMaxConns = 24

// migrationLock is the advisory lock key held while migrating ("toolgate"
// in ASCII), so nodes starting together apply each migration once.
const migrationLock = 0x746f6f6c67617465

// Retries of an operation PostgreSQL gave up (isRetryable).
const (
	writeAttempts     = 5
	firstRetryBackoff = 5 * time.Millisecond
)

// The connections' lock_timeout and statement_timeout unless the URL sets
// them: how long a statement waits for a lock (a row another transaction
// holds) and how long it may run, before PostgreSQL fails it.
var defaultRuntimeLimits = map[string]string{
	"lock_timeout":      "5s",
	"statement_timeout": "30s",
}

// Time limits of the store's own on PostgreSQL.
const (
	// writeAttemptTimeout bounds one attempt of a write up to its commit:
	// getting a connection, BEGIN and the operation's statements.
	writeAttemptTimeout = 30 * time.Second
	// commitTimeout bounds the COMMIT, timed on its own, so that an
	// attempt that ran long still has the time to commit.
	commitTimeout = 30 * time.Second
	// readTimeout bounds a read from the pool (reads.get, reads.sel).
	readTimeout = 30 * time.Second
	// closeGrace is how long Close waits for the writes running before it
	// ends them (they fail with ErrUnavailable).
	closeGrace = 5 * time.Second
)

// defaultResyncEvery is Store.ResyncEvery as Open sets it.
const defaultResyncEvery = 5 * time.Second

// postgres is what a store on PostgreSQL runs besides its reads: the
// writes, each in a transaction of its own on the pool, the publisher of
// their changes and the listener for the other nodes' (notify.go).
type postgres struct {
	db      *sqlx.DB        // the pool (the store's reads use it too)
	config  *pgx.ConnConfig // for the listening connection
	appName string          // the connections' application_name
	node    string          // the store's node id
	stats   *writeStats
	log     *slog.Logger

	mu     sync.RWMutex // guards closed against new writes and listening
	closed bool

	changesMu sync.Mutex
	onChanges func([]Change) // told of other nodes' changes

	writes sync.WaitGroup // operations running (for Close to wait on)
	// writesCtx is the parent of every write attempt's context; Close
	// cancels it when the writes running outlast closeGrace.
	writesCtx    context.Context
	cancelWrites context.CancelFunc

	notes     chan []Change // committed changes for the publisher
	published chan struct{} // closed when the publisher has sent the last

	ctx       context.Context // ends at Close: stops the listener and the timer
	stop      context.CancelFunc
	listening sync.Once
	loops     sync.WaitGroup // the listener, the timer and the deliverer
	heard     chan []Change  // from the listener and the timer to the deliverer
}

// isPostgresURL reports whether target names a PostgreSQL database.
func isPostgresURL(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// applicationName is the application_name of a node's connections unless
// the URL sets one: "toolgate-" and the first 8 characters of the node id.
func applicationName(node string) string { return "toolgate-" + node[:8] }

// ApplicationName returns the application_name this store's PostgreSQL
// connections carry (pg_stat_activity shows it); "" on SQLite.
func (s *Store) ApplicationName() string {
	if s.pg == nil {
		return ""
	}
	return s.pg.appName
}

// openPostgres opens the PostgreSQL database at url, applies pending
// migrations and starts the publisher.
func openPostgres(url string, log *slog.Logger) (*Store, error) {
	config, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	node := newNodeID()
	if config.RuntimeParams["application_name"] == "" {
		config.RuntimeParams["application_name"] = applicationName(node)
	}
	setRuntimeLimits(config)
	db := sqlx.NewDb(stdlib.OpenDB(*config), "pgx")
	db.SetMaxOpenConns(postgresMaxConns)
	db.SetMaxIdleConns(postgresMaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s@%s/%s: %w", config.User, config.Host, config.Database, err)
	}
	if err := migratePostgres(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	loopCtx, stop := context.WithCancel(context.Background())
	writesCtx, cancelWrites := context.WithCancel(context.Background())
	s := &Store{
		log:    log,
		read:   reads{db: db, prep: &prepared{stmts: map[string]*sqlx.Stmt{}}, postgres: true},
		tail:   newEventTail(),
		finals: newRecentFinals(),
		node:   node,
		shared: true,
		Now:    time.Now,
		pg: &postgres{
			db:        db,
			node:      node,
			log:       log,
			config:    config,
			appName:   config.RuntimeParams["application_name"],
			writesCtx: writesCtx,
			notes:     make(chan []Change, 1024),
			published: make(chan struct{}),
			ctx:       loopCtx,
			stop:      stop,
			heard:     make(chan []Change, 64),

			cancelWrites: cancelWrites,
		},
		ResyncEvery: defaultResyncEvery,
	}
	s.pg.stats = &s.stats
	go s.pg.publish()
	return s, nil
}

// setRuntimeLimits sets defaultRuntimeLimits in config's runtime
// parameters, each unless the URL set it (as a parameter of its own or in
// options=-c ...).
func setRuntimeLimits(config *pgx.ConnConfig) {
	for name, value := range defaultRuntimeLimits {
		if _, set := config.RuntimeParams[name]; !set && !strings.Contains(config.RuntimeParams["options"], name) {
			config.RuntimeParams[name] = value
		}
	}
}

// migratePostgres applies PostgreSQL's migrations (migrations.Postgres)
// holding the migration lock, on one connection of db (an advisory lock
// belongs to the session that took it).
func migratePostgres(ctx context.Context, db *sqlx.DB) error {
	conn, err := db.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Waiting for another node's migrations, or for the locks a migration
	// takes while nodes serve, is bounded by ctx, not lock_timeout.
	if _, err := conn.ExecContext(ctx, `SET lock_timeout = 0`); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.ExecContext(context.Background(), `RESET lock_timeout`)
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("store: take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	return migrate(conn, migrations.Postgres, dollar)
}

// close waits for the operations running (ending those still
// running after closeGrace), stops the listener and the timer, lets the
// publisher send what is left and closes the pool.
func (p *postgres) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	written := make(chan struct{})
	go func() {
		p.writes.Wait()
		close(written)
	}()
	select {
	case <-written:
	case <-time.After(closeGrace):
		p.log.Warn("store: writes still running at close are ended", "waited", closeGrace)
		p.cancelWrites()
		<-written
	}
	p.cancelWrites()
	p.stop()
	p.loops.Wait()
	close(p.notes)
	<-p.published
	return p.db.Close()
}

// startWrite counts an operation in, for Close; false once closed.
func (p *postgres) startWrite() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false
	}
	p.writes.Add(1)
	return true
}

// write is Write on PostgreSQL: fn in a transaction of its own,
// run again when PostgreSQL gave the transaction up; once committed, its
// changes go to the publisher.
func (p *postgres) write(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !p.startWrite() {
		return ErrClosed
	}
	defer p.writes.Done()
	return p.run(fn)
}

// writeAsync is WriteAsync on PostgreSQL.
func (p *postgres) writeAsync(fn func(tx *Tx) error) {
	if !p.startWrite() {
		return
	}
	go func() {
		defer p.writes.Done()
		if err := p.run(fn); err != nil {
			p.log.Error("store: background write failed", "err", err)
		}
	}()
}

// run runs fn until it commits, fails for good or has been given
// up writeAttempts times. An attempt is run again when PostgreSQL gave its
// transaction up (isRetryable) or its connection failed before the commit
// (mayRunAgain): nothing of it was committed.
func (p *postgres) run(fn func(tx *Tx) error) error {
	backoff := firstRetryBackoff
	for attempt := 1; ; attempt++ {
		notes, err := p.runOnce(fn)
		if err == nil {
			if len(notes) > 0 {
				p.notes <- notes
			}
			return nil
		}
		if !(isRetryable(err) || mayRunAgain(err)) || attempt == writeAttempts {
			return postgresErrorAs(err)
		}
		select {
		case <-time.After(backoff):
		case <-p.writesCtx.Done():
			return postgresErrorAs(err)
		}
		backoff *= 2
	}
}

// beginError is a failure to start a transaction (a connection the
// database cut, say): the operation did not run, so it may run again.
type beginError struct{ err error }

func (e beginError) Error() string { return e.err.Error() }
func (e beginError) Unwrap() error { return e.err }

// lostConnection is a transaction whose connection failed before its
// commit was sent: nothing of it was committed, so the operation may run
// again (on another connection).
type lostConnection struct{ err error }

func (e lostConnection) Error() string { return e.err.Error() }
func (e lostConnection) Unwrap() error { return e.err }

// mayRunAgain reports whether err is an attempt that committed nothing
// because of its connection, not of what it did: a beginError or a
// lostConnection.
func mayRunAgain(err error) bool {
	var notBegun beginError
	var lost lostConnection
	return errors.As(err, &notBegun) || errors.As(err, &lost)
}

// isConnectionLost reports whether err is a connection that failed: the
// database unavailable (isUnavailable), but not a statement it failed
// after waiting too long (lock_timeout, statement_timeout), which would
// wait as long again.
func isConnectionLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == pgLockNotAvailable || pe.Code == pgQueryCanceled) {
		return false
	}
	return isUnavailable(err)
}

// Messages of the writes whose attempt was ended by its time limit or by
// Close: before the commit, nothing was stored; during it, the database
// did not say.
const (
	msgAttemptEnded = "the gateway's database did not answer in time (a row locked by another transaction, or the database unreachable), so this change was not stored: retry shortly"
	msgUnconfirmed  = "the gateway's database did not confirm this change in time: it may or may not have been stored; read it back, or retry with the same Idempotency-Key"
)

// runOnce runs fn once in a transaction and commits it, returning
// the changes it noted. The attempt has writeAttemptTimeout up to the
// commit and commitTimeout for it; an attempt ended by its time limit, or
// by Close, fails with ErrUnavailable.
func (p *postgres) runOnce(fn func(tx *Tx) error) ([]Change, error) {
	p.stats.transactions.Add(1)
	p.stats.operations.Add(1)
	// One context for BEGIN, the statements and COMMIT (database/sql
	// commits with BEGIN's context), ended by the timer.
	ctx, end := context.WithCancel(p.writesCtx)
	defer end()
	limit := time.AfterFunc(writeAttemptTimeout, end)
	defer limit.Stop()
	sqlTx, err := p.db.BeginTxx(ctx, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, unavailableError{driver: err, message: msgAttemptEnded}
		}
		return nil, beginError{err} // nothing was written: safe to run again
	}
	tx := &Tx{pg: sqlTx, ctx: ctx, node: p.node}
	err = runOp(&writeOp{fn: fn}, tx, p.log)
	if err == nil && !limit.Stop() {
		err = context.DeadlineExceeded // out of time after fn's last statement
	}
	if err != nil {
		sqlTx.Rollback()
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, unavailableError{driver: err, message: msgAttemptEnded}
		}
		if r, ok := err.(refusal); ok {
			return nil, r.err
		}
		if isConnectionLost(err) {
			return nil, lostConnection{err}
		}
		return nil, err
	}
	limit.Reset(commitTimeout)
	if err := sqlTx.Commit(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, err // the database refused the commit: nothing stored
		}
		return nil, unavailableError{driver: err, message: msgUnconfirmed}
	}
	return tx.changes.notes, nil
}

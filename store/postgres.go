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

// defaultResyncEvery is Store.ResyncEvery as Open sets it.
const defaultResyncEvery = 5 * time.Second

// postgres is what a store on PostgreSQL runs besides its pool.
type postgres struct {
	config  *pgx.ConnConfig // for the listening connection
	appName string          // the connections' application_name

	writes sync.WaitGroup // operations running (for Close to wait on)

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
	s := &Store{
		log:      log,
		readers:  db,
		readPrep: &prepared{stmts: map[string]*sqlx.Stmt{}},
		tail:     newEventTail(),
		finals:   newRecentFinals(),
		node:     node,
		shared:   true,
		Now:      time.Now,
		pg: &postgres{
			config:    config,
			appName:   config.RuntimeParams["application_name"],
			notes:     make(chan []Change, 1024),
			published: make(chan struct{}),
			ctx:       loopCtx,
			stop:      stop,
			heard:     make(chan []Change, 64),
		},
		ResyncEvery: defaultResyncEvery,
	}
	go s.publish()
	return s, nil
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
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("store: take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	return migrate(conn, migrations.Postgres, dollar)
}

// closePostgres waits for the operations running, stops the listener and
// the timer, lets the publisher send what is left and closes the pool.
func (s *Store) closePostgres() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.pg.writes.Wait()
	s.pg.stop()
	s.pg.loops.Wait()
	close(s.pg.notes)
	<-s.pg.published
	return s.readers.Close()
}

// startWrite counts an operation in, for Close; false once closed.
func (s *Store) startWrite() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	s.pg.writes.Add(1)
	return true
}

// writePostgres is Write on PostgreSQL: fn in a transaction of its own,
// run again when PostgreSQL gave the transaction up; once committed, its
// changes go to the publisher.
func (s *Store) writePostgres(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.startWrite() {
		return ErrClosed
	}
	defer s.pg.writes.Done()
	return s.runPostgres(fn)
}

// writePostgresAsync is WriteAsync on PostgreSQL.
func (s *Store) writePostgresAsync(fn func(tx *Tx) error) {
	if !s.startWrite() {
		return
	}
	go func() {
		defer s.pg.writes.Done()
		if err := s.runPostgres(fn); err != nil {
			s.log.Error("store: background write failed", "err", err)
		}
	}()
}

// runPostgres runs fn until it commits, fails for good or has been given
// up writeAttempts times.
func (s *Store) runPostgres(fn func(tx *Tx) error) error {
	backoff := firstRetryBackoff
	for attempt := 1; ; attempt++ {
		notes, err := s.runPostgresOnce(fn)
		if err == nil {
			if len(notes) > 0 {
				s.pg.notes <- notes
			}
			return nil
		}
		var notBegun beginError
		if !(isRetryable(err) || errors.As(err, &notBegun)) || attempt == writeAttempts {
			return storageFullAs(err)
		}
		time.Sleep(backoff)
		backoff *= 2
	}
}

// beginError is a failure to start a transaction (a connection the
// database cut, say): the operation did not run, so it may run again.
type beginError struct{ err error }

func (e beginError) Error() string { return e.err.Error() }
func (e beginError) Unwrap() error { return e.err }

// runPostgresOnce runs fn once in a transaction and commits it, returning
// the changes it noted.
func (s *Store) runPostgresOnce(fn func(tx *Tx) error) ([]Change, error) {
	s.transactions.Add(1)
	s.operations.Add(1)
	sqlTx, err := s.readers.BeginTxx(context.Background(), nil)
	if err != nil {
		return nil, beginError{err} // nothing was written: safe to run again
	}
	tx := &Tx{pg: sqlTx, node: s.node}
	err = runOp(&writeOp{fn: fn}, tx, s.log)
	if err != nil {
		sqlTx.Rollback()
		if r, ok := err.(refusal); ok {
			return nil, r.err
		}
		return nil, err
	}
	if err := sqlTx.Commit(); err != nil {
		return nil, err
	}
	return tx.changes.notes, nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/toolgate/toolgate/migrations"
)

// Store is an open toolgate database.
type Store struct {
	read reads         // the read pool (statements.go)
	w    *sqliteWriter // the single writer (writer.go); nil on PostgreSQL
	cp   *checkpointer // copies the WAL back (checkpoint.go); nil on PostgreSQL
	pg   *postgres     // what runs only on PostgreSQL (postgres.go); nil on SQLite

	tail   *eventTail    // recent events in memory
	finals *recentFinals // records of calls that just ended

	// log receives what the writer and the checkpointer cannot return to
	// anyone: failed background writes, panics, failed checkpoints.
	log *slog.Logger

	stats writeStats

	node   string // this process's node id (cluster.go)
	shared bool   // other nodes may share the database

	// ResyncEvery is how often, on PostgreSQL, the function set with
	// OnChanges is told ChangeResync even when no notification was
	// missed: the safety net under LISTEN/NOTIFY. Open sets it to 5 s;
	// change it before OnChanges.
	ResyncEvery time.Duration

	// Now is the clock; tests may replace it before use.
	Now func() time.Time
}

// dsn builds the connection string. busy_timeout comes first so that the
// pragmas after it wait for a lock rather than fail; WAL lets readers run
// beside the writer; synchronous(NORMAL) in WAL mode is durable against a
// process crash (kill -9) and loses at most the last commits on power loss;
// _txlock=immediate makes the migrations' BEGIN take the write lock up
// front, so a read-then-write transaction never fails half-way with
// SQLITE_BUSY (the writer's own transactions say BEGIN IMMEDIATE, writer.go).
func dsn(path string, readOnly bool) string {
	q := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)"
	if readOnly {
		q += "&_pragma=query_only(1)"
	} else {
		// Checkpoints run on their own connection (checkpoint.go).
		q += "&_txlock=immediate&_pragma=wal_autocheckpoint(0)"
	}
	return "file:" + path + "?" + q
}

// Open opens the database target names, applies pending migrations and
// starts what writes to it. A target starting with postgres:// or
// postgresql:// is a PostgreSQL database that several nodes may share
// (postgres.go); anything else is the path of a SQLite file, created if
// needed, served by this process alone.
func Open(target string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if isPostgresURL(target) {
		return openPostgres(target, log)
	}
	return openSQLite(target, log)
}

// openSQLite opens (creating if needed) the SQLite database at path,
// applies pending migrations and starts the writer.
func openSQLite(path string, log *slog.Logger) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store: database path %q must not contain '?' or '#'", path)
	}
	if err := createPrivate(path, log); err != nil {
		return nil, err
	}
	writer, err := sqlx.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	if err := writer.Ping(); err != nil {
		writer.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := migrateSQLite(writer); err != nil {
		writer.Close()
		return nil, err
	}
	// The writer's transactions run on this connection (writer.go); the
	// pool of one has nothing else to hand out from here on.
	writeConn, err := writer.Connx(context.Background())
	if err != nil {
		writer.Close()
		return nil, err
	}
	readers, err := sqlx.Open("sqlite", dsn(path, true))
	if err != nil {
		writeConn.Close()
		writer.Close()
		return nil, err
	}
	readers.SetMaxOpenConns(8)
	readers.SetMaxIdleConns(8)
	writePrep, err := prepareAll(writeConn)
	if err != nil {
		writeConn.Close()
		writer.Close()
		readers.Close()
		return nil, err
	}
	readPrep, err := prepareAll(readers)
	if err != nil {
		writePrep.close()
		writeConn.Close()
		writer.Close()
		readers.Close()
		return nil, err
	}
	s := &Store{
		log:         log,
		read:        reads{db: readers, prep: readPrep},
		tail:        newEventTail(),
		finals:      newRecentFinals(),
		node:        newNodeID(),
		Now:         time.Now,
		ResyncEvery: defaultResyncEvery,
	}
	s.w = &sqliteWriter{
		db:     writer,
		conn:   writeConn,
		prep:   writePrep,
		ops:    make(chan *writeOp, 1024),
		done:   make(chan struct{}),
		quiet:  make(chan func()),
		tail:   s.tail,
		finals: s.finals,
		rows:   openRows{},
		node:   s.node,
		stats:  &s.stats,
		log:    log,
		now:    func() time.Time { return s.Now() },
	}
	cp, err := openCheckpointer(path)
	if err != nil {
		writePrep.close()
		readPrep.close()
		writeConn.Close()
		writer.Close()
		readers.Close()
		return nil, fmt.Errorf("store: open %s for checkpoints: %w", path, err)
	}
	s.cp = &checkpointer{db: cp, stop: make(chan struct{}), done: make(chan struct{}), quiet: s.w.quiet, log: log}
	go s.cp.run()
	go s.w.run()
	return s, nil
}

// createPrivate creates the database file readable by its owner alone
// (0600, whatever the umask) before SQLite opens it; SQLite gives the -wal
// and -shm files it creates beside it the main file's permissions, so they
// are 0600 too. The database holds every call's arguments and results, and
// people read it with SQL. A file that already exists keeps its mode; one
// that others may read is logged, for the operator to tighten.
func createPrivate(path string, log *slog.Logger) error {
	if path == ":memory:" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		// The umask can only take bits away from 0600; Chmod makes it
		// exactly 0600 all the same.
		return errors.Join(f.Chmod(0o600), f.Close())
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		log.Warn("the database file can be read by other users; chmod 600 it (and its -wal and -shm)", "path", path, "mode", info.Mode().Perm().String())
	}
	return nil
}

// Close stops the writer after the operations already submitted, then
// closes the database.
func (s *Store) Close() error {
	if s.pg != nil {
		return s.pg.close()
	}
	if !s.w.stop() {
		return nil
	}
	s.cp.halt()
	s.w.prep.close()
	s.read.prep.close()
	return errors.Join(s.w.conn.Close(), s.read.db.Close(), s.w.db.Close(), s.cp.db.Close())
}

// Transactions returns how many write transactions have been committed or
// attempted since Open; Operations how many write operations they carried.
// Their ratio is the group-commit factor.
func (s *Store) Transactions() int64 { return s.stats.transactions.Load() }

// Operations returns how many write operations have been run since Open.
func (s *Store) Operations() int64 { return s.stats.operations.Load() }

// migrateSQLite applies SQLite's migrations (migrations.FS).
func migrateSQLite(db *sqlx.DB) error {
	conn, err := db.Connx(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	return migrate(conn, migrations.FS, func(q string) string { return q })
}

// migrate applies, in name order, the migrations of files not yet
// recorded, each in its own transaction with its record, on conn; bind
// turns a ? query into the database's placeholders.
func migrate(conn *sqlx.Conn, files fs.FS, bind func(string) string) error {
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n int
		if err := conn.GetContext(ctx, &n, bind(`SELECT COUNT(*) FROM schema_migrations WHERE name = ?`), name); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		tx, err := conn.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migration %s: %w", name, err)
		}
		if _, err := tx.Exec(bind(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`), name, time.Now().UnixMilli()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: migration %s: %w", name, err)
		}
	}
	return nil
}

var (
	qGetSetting = query(`SELECT value FROM settings WHERE key = ?`)
	qPutSetting = query(`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
	qDelSetting = query(`DELETE FROM settings WHERE key = ?`)
)

// Setting reads a value from the settings table; ok is false when unset.
func (s *Store) Setting(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.read.get(ctx, &value, qGetSetting, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// PutSetting stores a value in the settings table.
func (tx *Tx) PutSetting(key, value string) error {
	_, err := tx.exec(qPutSetting, key, value)
	return err
}

// DeleteSetting removes a value from the settings table (nothing when unset).
func (tx *Tx) DeleteSetting(key string) error {
	_, err := tx.exec(qDelSetting, key)
	return err
}

// newNodeID returns a fresh node id: a random UUID (v4), so that its
// first 8 characters, which name the node's PostgreSQL connections
// (applicationName), tell apart nodes started in the same minute (those
// of a UUIDv7 are its time stamp's).
func newNodeID() string { return uuid.Must(uuid.NewRandom()).String() }

// ms turns a time into the stored Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS turns stored Unix milliseconds into a time in UTC.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// fromNullMS turns a nullable column into a time, zero when NULL.
func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
}

// Ping checks that the database answers a read.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.read.db.GetContext(ctx, &one, `SELECT 1`)
}

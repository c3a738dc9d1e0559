package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolgate/toolgate/migrations"
)

// Backups of a SQLite database (toolgate backup and toolgate restore).
//
// A backup is VACUUM INTO, run on a connection of its own beside a
// serving gateway: one read transaction, which in WAL mode takes no lock
// that a writer waits for, copies the snapshot it started on, whatever is
// committed meanwhile. (SQLite's online backup API was the other choice:
// run in steps it starts again whenever another connection writes, so on a
// busy gateway it may never finish; run in one step it is the same single
// read transaction.) The one cost to the gateway is that, while the read
// lasts, checkpoints cannot move past its snapshot and the WAL grows; past
// walLimitFrames the writer pauses for one PASSIVE checkpoint every
// checkpointInterval (checkpoint.go), which copies what it can and returns.
//
// The copy is written beside the target under a temporary name, switched
// to a rollback journal so that it is one self-contained file, checked
// (integrity and migrations), synced, and only then given its name: a
// crash leaves either no backup or a whole one.

// ErrNotToolgate is found (with errors.Is) in the error of a backup or
// restore whose database is a SQLite file but not a toolgate database.
var ErrNotToolgate = errors.New("not a toolgate database")

// ErrInUse is found (with errors.Is) in the error of a restore onto a
// database that a running gateway has open.
var ErrInUse = errors.New("the database is open in a running gateway")

// BackupInfo says what a backup wrote.
type BackupInfo struct {
	Bytes      int64         // size of the copy
	Migrations int           // migrations applied to the database copied
	Took       time.Duration // how long the copy's read transaction lasted
}

// BackupSQLite writes a consistent copy of the toolgate SQLite database at
// path to target, while a gateway may be serving on it. A target that
// exists is refused unless overwrite; with overwrite it is replaced in one
// rename. Nothing in the database is changed (with no gateway serving,
// SQLite checkpoints its WAL when the copy's connection closes, as the
// last connection to close does).
func BackupSQLite(ctx context.Context, path, target string, overwrite bool) (BackupInfo, error) {
	var info BackupInfo
	if err := CheckBackupPaths(path, target, overwrite); err != nil {
		return info, err
	}
	src, err := openExisting(path, false)
	if err != nil {
		return info, err
	}
	defer src.Close()
	if info.Migrations, err = toolgateMigrations(ctx, src, path); err != nil {
		return info, err
	}
	tmp, err := tempBeside(target)
	if err != nil {
		return info, err
	}
	defer os.Remove(tmp) // gone once renamed
	start := time.Now()
	// VACUUM INTO wants a file that does not exist or is empty: tempBeside
	// made an empty one, 0600, as the copy holds every call's arguments.
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return info, fmt.Errorf("copy %s: %w", path, err)
	}
	info.Took = time.Since(start)
	if err := sealCopy(ctx, tmp); err != nil {
		return info, err
	}
	if err := putInPlace(tmp, target, overwrite); err != nil {
		return info, err
	}
	if st, err := os.Stat(target); err == nil {
		info.Bytes = st.Size()
	}
	return info, nil
}

// CheckSQLiteBackup checks that the file at path is a whole toolgate
// database: SQLite's integrity_check passes and its migrations are ones
// this version knows. It returns how many migrations it holds.
func CheckSQLiteBackup(ctx context.Context, path string) (migrationsApplied int, err error) {
	// A copy of a live database's files (not one toolgate backup wrote,
	// which is one file) may hold committed transactions in its -wal:
	// opened immutable, and copied alone, they would be lost unseen.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return 0, fmt.Errorf("%s has a write-ahead log beside it (%s-wal, %d bytes) holding transactions the file alone lacks: "+
			"restore from a copy made with toolgate backup, or open this one with sqlite3 once (which checkpoints its log into it) and restore that", path, path, fi.Size())
	}
	db, err := openExisting(path, true)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := integrity(ctx, db, path, "integrity_check"); err != nil {
		return 0, err
	}
	return toolgateMigrations(ctx, db, path)
}

// RestoreSQLite puts the backup at from in place as the database at path.
// It refuses when from is not a whole toolgate database, and when a
// running gateway has the database at path open (ErrInUse). A database
// already at path is refused unless overwrite. The copy is written beside
// path and renamed over it once synced, after the old database's -wal and
// -shm files are removed (the new file must not meet the old file's log),
// so the path holds the old database or the new one, never half of one.
func RestoreSQLite(ctx context.Context, from, path string, overwrite bool) error {
	if isPostgresURL(path) {
		return errors.New("the database is a PostgreSQL URL: restore it with PostgreSQL's own tools (pg_restore, or a base backup with its WAL archive)")
	}
	if same, err := samePath(from, path); err != nil {
		return err
	} else if same {
		return fmt.Errorf("the backup %s is the database itself", from)
	}
	if _, err := CheckSQLiteBackup(ctx, from); err != nil {
		return fmt.Errorf("the backup cannot be restored: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		if !overwrite {
			return fmt.Errorf("%s exists: stop its gateway and give --force to replace it", path)
		}
		if err := checkNotInUse(ctx, path); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := tempBeside(path)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := copyFile(from, tmp); err != nil {
		return err
	}
	if err := sealCopy(ctx, tmp); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the old database's %s: %w", suffix, err)
		}
	}
	return putInPlace(tmp, path, true)
}

// CheckBackupPaths refuses what BackupSQLite refuses before it reads the
// database: a PostgreSQL URL, a database in memory, a target that is the
// database or one of its files, and, unless overwrite, a target that
// exists.
func CheckBackupPaths(path, target string, overwrite bool) error {
	if isPostgresURL(path) {
		return errors.New("the database is a PostgreSQL URL: back it up with PostgreSQL's own tools (pg_dump, or base backups with WAL archiving)")
	}
	if path == ":memory:" || path == "" {
		return errors.New("the database is in memory: there is nothing on disk to back up")
	}
	if target == "" {
		return errors.New("no target file")
	}
	if strings.ContainsAny(path, "?#") || strings.ContainsAny(target, "?#") {
		return errors.New("a path with '?' or '#' is not supported")
	}
	// .agent-key is the gateway's key file beside the database.
	for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".agent-key"} {
		same, err := samePath(path+suffix, target)
		if err != nil {
			return err
		}
		if same {
			return fmt.Errorf("the target %s is the database's own file %s: back up to another file", target, path+suffix)
		}
	}
	if _, err := os.Lstat(target); err == nil && !overwrite {
		return fmt.Errorf("%s exists: give --force to replace it", target)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// samePath reports whether a and b name the same file: the same absolute
// path, or, both existing, the same file by another name (a link).
func samePath(a, b string) (bool, error) {
	absA, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	absB, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	if absA == absB {
		return true, nil
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb), nil
}

// openExisting opens the SQLite file at path on one connection without
// creating it (a missing file is an error, not a new empty database).
// readOnly opens a file nobody else writes (a backup) as immutable.
func openExisting(path string, readOnly bool) (*sql.DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	q := "mode=rw&_pragma=busy_timeout(10000)"
	if readOnly {
		q = "mode=ro&immutable=1"
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// toolgateMigrations checks that db is a toolgate database — it has the
// migrations table, holding the first migration and none this version
// does not know — and returns how many migrations it holds.
func toolgateMigrations(ctx context.Context, db *sql.DB, path string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: %w (no schema_migrations table)", path, ErrNotToolgate)
	}
	known, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return 0, err
	}
	rows, err := db.QueryContext(ctx, `SELECT name FROM schema_migrations ORDER BY name`)
	if err != nil {
		return 0, fmt.Errorf("read %s's migrations: %w", path, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return 0, err
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(names) == 0 || len(known) == 0 || names[0] != known[0] {
		return 0, fmt.Errorf("%s: %w (its migrations table does not start with %s)", path, ErrNotToolgate, known[0])
	}
	for _, name := range names {
		if !containsString(known, name) {
			return 0, fmt.Errorf("%s holds migration %s, which this toolgate does not know: restore it with the version that wrote it, or a newer one", path, name)
		}
	}
	return len(names), nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// integrity runs PRAGMA check (integrity_check or quick_check) and fails
// unless it says ok.
func integrity(ctx context.Context, db *sql.DB, path, check string) error {
	rows, err := db.QueryContext(ctx, `PRAGMA `+check)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", path, check, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() && len(problems) < 5 {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %s: %w", path, check, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s is damaged: %s", path, strings.Join(problems, "; "))
	}
	return nil
}

// sealCopy makes the copy at path one self-contained file (a rollback
// journal, not WAL, so it needs no -wal beside it), checks it whole and a
// toolgate database, and syncs it.
func sealCopy(ctx context.Context, path string) error {
	db, err := openExisting(path, false)
	if err != nil {
		return err
	}
	var mode string
	err = db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode)
	if err == nil {
		err = integrity(ctx, db, path, "quick_check")
	}
	if err == nil {
		_, err = toolgateMigrations(ctx, db, path)
	}
	if err = errors.Join(err, db.Close()); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// tempBeside creates an empty file readable by its owner alone in the
// directory of path, named after it, and returns its name.
func tempBeside(path string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	return name, errors.Join(f.Chmod(0o600), f.Close())
}

// copyFile copies the file from into the existing file to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = dst.ReadFrom(src)
	return errors.Join(err, dst.Close())
}

// putInPlace gives the synced file tmp the name path: renamed over what is
// there with overwrite, otherwise linked (never over an existing file).
// The directory is synced after.
func putInPlace(tmp, path string, overwrite bool) error {
	var err error
	if overwrite {
		err = os.Rename(tmp, path)
	} else if err = os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: give --force to replace it", path)
	}
	if err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// checkNotInUse refuses a database that another process has open: an
// exclusive lock taken without waiting fails while any connection of a
// gateway holds it (in WAL mode each keeps a shared lock as long as it is
// open). The lock is released at once.
func checkNotInUse(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(0)&_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err = conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err == nil {
		_, err = conn.ExecContext(ctx, `COMMIT`)
	}
	if err != nil && isBusy(err) {
		return fmt.Errorf("%s: %w: stop the gateway first", path, ErrInUse)
	}
	return err
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (or SQLITE_LOCKED):
// another connection holds the lock asked for.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED
}

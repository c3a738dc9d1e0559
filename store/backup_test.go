package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// putSetting writes one setting through the store's writer.
func putSetting(t testing.TB, st *store.Store, key, value string) {
	t.Helper()
	if err := st.Write(context.Background(), func(tx *store.Tx) error { return tx.PutSetting(key, value) }); err != nil {
		t.Fatal(err)
	}
}

// settingOf opens the database at path as a gateway would and reads one
// setting.
func settingOf(t *testing.T, path, key string) (string, bool) {
	t.Helper()
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v, ok, err := st.Setting(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// TestBackupWhileServingHoldsWhatWasCommitted backs up a database its
// store keeps writing to: the copy holds what was committed before the
// backup, not what came after, is one file (no -wal beside it) readable by
// its owner alone, and restores over a stopped database, whose stale -wal
// and -shm go.
func TestBackupWhileServingHoldsWhatWasCommitted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "before", "1")
	target := filepath.Join(dir, "backup.db")
	info, err := store.BackupSQLite(context.Background(), path, target, false)
	if err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "after", "2")
	if info.Bytes <= 0 || info.Migrations == 0 {
		t.Fatalf("info = %+v", info)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	if _, err := os.Stat(target + "-wal"); err == nil {
		t.Fatal("the backup has a -wal beside it")
	}
	if n, err := store.CheckSQLiteBackup(context.Background(), target); err != nil || n != info.Migrations {
		t.Fatalf("check = %d, %v", n, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}

	// A serving database is not restored over.
	if err := store.RestoreSQLite(context.Background(), target, path, true); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("restore over a serving database: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.RestoreSQLite(context.Background(), target, path, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over an existing database without overwrite: %v", err)
	}
	// A -wal left by a crash must not meet the restored file.
	if err := os.WriteFile(path+"-wal", []byte("stale log"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.RestoreSQLite(context.Background(), target, path, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the old -wal is still there")
	}
	if v, ok := settingOf(t, path, "before"); !ok || v != "1" {
		t.Fatalf("before = %q %v", v, ok)
	}
	if _, ok := settingOf(t, path, "after"); ok {
		t.Fatal("a setting written after the backup is in it")
	}
}

// TestBackupRefusals: each refused backup names its reason and writes
// nothing.
func TestBackupRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "k", "v")
	defer st.Close()
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.db")
	db, err := sql.Open("sqlite", plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "text.db")
	if err := os.WriteFile(text, []byte(strings.Repeat("not sqlite\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, db, target string
		want             string
	}{
		{"target exists", path, existing, "give --force"},
		{"target is the database", path, path, "the database's own file"},
		{"target is the database by another name", path, filepath.Join(dir, ".", "toolgate.db"), "the database's own file"},
		{"target is a link to the database", path, filepath.Join(dir, "link.db"), "the database's own file"},
		{"target is the database's log", path, path + "-wal", "the database's own file"},
		{"target is the key file", path, path + ".agent-key", "the database's own file"},
		{"postgres", "postgres://u@localhost/toolgate", filepath.Join(dir, "pg.db"), "pg_dump"},
		{"not a toolgate database", plain, filepath.Join(dir, "b1.db"), "not a toolgate database"},
		{"not a database", text, filepath.Join(dir, "b2.db"), "not a database"},
		{"missing database", filepath.Join(dir, "missing.db"), filepath.Join(dir, "b3.db"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.BackupSQLite(context.Background(), tc.db, tc.target, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Fatalf("the existing target was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Fatal("a backup of a missing database created it")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "b") || strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("a refused backup left %s", e.Name())
		}
	}
	// With overwrite, the existing target is replaced by the copy.
	if _, err := store.BackupSQLite(context.Background(), path, existing, true); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CheckSQLiteBackup(context.Background(), existing); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefusesBadBackups: a damaged backup, one that is no toolgate
// database and one from a newer version are refused before the database
// in place is touched.
func TestRestoreRefusesBadBackups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		putSetting(t, st, "k"+strings.Repeat("x", i%50)+string(rune('a'+i%26)), strings.Repeat("v", 500))
	}
	good := filepath.Join(dir, "good.db")
	if _, err := store.BackupSQLite(context.Background(), path, good, false); err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "current", "yes")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	damaged := filepath.Join(dir, "damaged.db")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+8192 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(damaged, b, 0o600); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, b[:len(b)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	if _, err := store.BackupSQLite(context.Background(), path, newer, false); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	plain := filepath.Join(dir, "plain.db")
	db, err = sql.Open("sqlite", plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (name TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct{ name, from, want string }{
		{"damaged", damaged, "cannot be restored"},
		{"truncated", truncated, "cannot be restored"},
		{"newer", newer, "does not know"},
		{"not toolgate", plain, "not a toolgate database"},
		{"missing", filepath.Join(dir, "missing.db"), "no such file"},
		{"itself", path, "the database itself"},
		{"postgres target", good, "pg_restore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := path
			if tc.name == "postgres target" {
				target = "postgres://u@localhost/toolgate"
			}
			err := store.RestoreSQLite(context.Background(), tc.from, target, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if v, ok := settingOf(t, path, "current"); !ok || v != "yes" {
		t.Fatalf("the database in place was changed by a refused restore: %q %v", v, ok)
	}
}

// TestCloseDoesNotWaitForALongReader: a reader of another connection that
// holds an old snapshot (a backup copying, Litestream) keeps the last
// checkpoint from emptying the WAL; Close gives up on it after a short
// wait instead of the 10 s busy timeout, and the data is all there at the
// next open.
func TestCloseDoesNotWaitForALongReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "first", "1")
	reader, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM settings`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	putSetting(t, st, "second", "2")
	start := time.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Generous: the wait is 1 s; without the bound it was the 10 s busy timeout.
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("Close took %s with a reader holding an old snapshot", took)
	}
	tx.Rollback()
	if v, ok := settingOf(t, path, "second"); !ok || v != "2" {
		t.Fatalf("second = %q %v", v, ok)
	}
}

// A copy of a live database's files, its -wal with them (what a file copy
// of a serving gateway, or a kill -9, leaves), is not a backup: restore
// refuses it, saying why, rather than put back the main file alone and
// lose the transactions its log holds.
func TestRestoreRefusesACopyWithAWriteAheadLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	putSetting(t, st, "early", "1")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	db.Close()
	putSetting(t, st, "committed", "yes")
	from := filepath.Join(dir, "copy.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(from+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(from + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the copy has no write-ahead log to lose (%v): the test sets up nothing", err)
	}
	dst := filepath.Join(dir, "restored.db")
	err = store.RestoreSQLite(context.Background(), from, dst, false)
	if err == nil || !strings.Contains(err.Error(), "write-ahead log") {
		v, ok := settingOf(t, dst, "committed")
		t.Fatalf("restore of a copy with its -wal: err %v; the restored database has committed=%q (present %v)", err, v, ok)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a refused restore wrote %s (%v)", dst, err)
	}
}

package store

import (
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
)

// checkpointInterval is how often the WAL is copied back into the database.
const checkpointInterval = 500 * time.Millisecond

// The writer's connection runs with wal_autocheckpoint(0): left on, SQLite
// checkpoints inside whichever commit crosses 1,000 WAL pages, and the
// calls whose answers rode in that commit wait for the copy and its fsync
// (the p99 of a round trip). Instead a connection of its own runs a
// PASSIVE checkpoint every half second, which never blocks the writer or
// the readers; it copies what no reader still needs.

// openCheckpointer opens the checkpointing connection.
func openCheckpointer(path string) (*sqlx.DB, error) {
	db, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, db.Ping()
}

// runCheckpoints checkpoints until stop closes, then once more.
func runCheckpoints(db *sqlx.DB, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			checkpoint(db, "TRUNCATE")
			return
		case <-t.C:
			checkpoint(db, "PASSIVE")
		}
	}
}

func checkpoint(db *sqlx.DB, mode string) {
	if _, err := db.Exec("PRAGMA wal_checkpoint(" + mode + ")"); err != nil {
		slog.Warn("store: wal checkpoint", "mode", mode, "err", err)
	}
}

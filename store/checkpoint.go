package store

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
)

// checkpointInterval is how often the WAL is copied back into the database.
var checkpointInterval = 500 * time.Millisecond

// The writer's connection runs with wal_autocheckpoint(0): left on, SQLite
// checkpoints inside whichever commit crosses 1,000 WAL pages, and the
// calls whose answers rode in that commit wait for the copy and its fsync
// (the p99 of a round trip). Instead a connection of its own runs a
// PASSIVE checkpoint every half second, which never blocks the writer or
// the readers; it copies what no reader still needs. Only when the WAL has
// grown long does one checkpoint pause the writer (see walLimitFrames).

// openCheckpointer opens the checkpointing connection.
func openCheckpointer(path string) (*sqlx.DB, error) {
	db, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// walLimitFrames bounds the WAL. A PASSIVE checkpoint copies frames back
// without blocking anyone, but the log starts again from its beginning
// only when a checkpoint has caught up with the last commit before the
// next commit begins — which, while commits follow each other without a
// pause, never happens: under the benchmark's load the WAL grew fast and
// without end (BENCHMARKS.md, "Figures behind design choices in the
// code"). When it passes this many frames, the next checkpoint runs on the
// writer's goroutine between two batches, so that no commit lands while it
// runs and the commit after it restarts the log; the writer pauses for
// that one checkpoint. (The WAL can still grow by what is written in one
// checkpointInterval past the limit.)
var walLimitFrames = 16384 // 64 MiB of 4 KiB pages

// checkpointer copies the WAL back into the database, on a connection of
// its own (see above).
type checkpointer struct {
	db    *sqlx.DB
	stop  chan struct{} // closed by halt
	done  chan struct{} // closed when run has returned
	quiet chan<- func() // to the writer: a checkpoint to run between batches
	log   *slog.Logger
}

// halt stops run after one last checkpoint and waits for it.
func (c *checkpointer) halt() {
	close(c.stop)
	<-c.done
}

// run checkpoints until stop closes, then once more.
func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			c.finalCheckpoint()
			return
		case <-t.C:
			if frames := c.checkpoint("PASSIVE"); frames <= walLimitFrames {
				continue
			}
			done := make(chan struct{})
			quiet := func() {
				c.checkpoint("PASSIVE")
				close(done)
			}
			select {
			case c.quiet <- quiet:
				<-done
			case <-c.stop:
				c.finalCheckpoint()
				return
			}
		}
	}
}

// finalCheckpointWait bounds how long the last checkpoint, at Close, waits
// for readers of other processes: a TRUNCATE checkpoint waits until no
// reader needs the WAL, and a reader that holds a snapshot for long (a
// toolgate backup copying, Litestream's lock) kept every shutdown waiting
// the whole 10 s busy timeout. Past it the WAL is left as it is, which the
// next start reads as usual.
var finalCheckpointWait = time.Second

// finalCheckpoint copies the WAL back and empties it, waiting for readers
// at most finalCheckpointWait.
func (c *checkpointer) finalCheckpoint() {
	if _, err := c.db.Exec(fmt.Sprintf("PRAGMA busy_timeout = %d", finalCheckpointWait.Milliseconds())); err != nil {
		c.log.Warn("store: wal checkpoint", "mode", "TRUNCATE", "err", err)
	}
	c.checkpoint("TRUNCATE")
}

// checkpoint runs one checkpoint in mode and returns how many frames the
// WAL holds (0 when that is not known).
func (c *checkpointer) checkpoint(mode string) (frames int) {
	var busy, copied int
	if err := c.db.QueryRow("PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &copied); err != nil {
		c.log.Warn("store: wal checkpoint", "mode", mode, "err", err)
		return 0
	}
	return frames
}

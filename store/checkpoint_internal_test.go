package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWALStaysBounded: while commits follow each other without a pause,
// the passive checkpoints alone never let the WAL start again; past
// walLimitFrames one checkpoint runs between two batches and the log
// restarts, so the WAL file stops growing.
func TestWALStaysBounded(t *testing.T) {
	savedLimit, savedInterval := walLimitFrames, checkpointInterval
	walLimitFrames, checkpointInterval = 200, 20*time.Millisecond
	defer func() { walLimitFrames, checkpointInterval = savedLimit, savedInterval }()
	path := filepath.Join(t.TempDir(), "wal.db")
	st, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// A fixed amount of work, not of time: 20,000 writes (about 4,000 commits here), and
	// without the quiet checkpoints a WAL of well over 20 MB on any host.
	const writesEach = 2500
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range writesEach {
				key := fmt.Sprintf("k%d-%d", w, i%500)
				value := fmt.Sprintf("%0512d", i) // about an eighth of a page
				if err := st.Write(ctx, func(tx *Tx) error { return tx.PutSetting(key, value) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The log restarts at the start of the file; its length is the
	// longest it has been: here 5–9 MB (the limit and what a few
	// intervals write); without the quiet checkpoints about 90 MB.
	if limit := int64(20 << 20); fi.Size() > limit {
		t.Fatalf("WAL file %d bytes after %d writes, want at most %d (%d transactions)", fi.Size(), 8*writesEach, limit, st.Transactions())
	}
	t.Logf("WAL file %d bytes after %d transactions", fi.Size(), st.Transactions())
}

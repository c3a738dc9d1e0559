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
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
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
	// longest it has been: here about 6 MB (the limit and what a few
	// intervals write); without the quiet checkpoints, 70–100 MB.
	if limit := int64(20 << 20); fi.Size() > limit {
		t.Fatalf("WAL file %d bytes after 3 s of commits, want at most %d (%d transactions)", fi.Size(), limit, st.Transactions())
	}
	t.Logf("WAL file %d bytes after %d transactions", fi.Size(), st.Transactions())
}

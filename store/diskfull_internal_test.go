//go:build linux

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/smalldisk"
)

// TestFullDiskFailsWritesAndRecovers fills the disk under a store whose WAL
// holds pages the database file does not have yet: the checkpoint that
// would copy them fails, every write (alone or in a batch) fails with
// ErrStorageFull carrying STORAGE_FULL, and nothing of them is stored. Once
// space returns, the same writer commits again and the checkpoint
// completes, so the WAL starts again from its beginning.
func TestFullDiskFailsWritesAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	saved := checkpointInterval
	checkpointInterval = time.Hour // this test runs the checkpoints
	defer func() { checkpointInterval = saved }()
	dir := smalldisk.Mount(t, "8m")
	st, err := Open(filepath.Join(dir, "full.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	put := func(key string) error {
		value := strings.Repeat("v", 3000) // most of a page: the file must grow
		return st.Write(ctx, func(tx *Tx) error { return tx.PutSetting(key, value) })
	}
	for i := range 200 {
		if err := put(fmt.Sprintf("stored-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	filler := smalldisk.Fill(t, dir)

	// The 200 rows are in the WAL only: copying them needs space.
	var busy, frames, copied int
	err = st.cp.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	if !isNoSpace(err) {
		t.Fatalf("checkpoint on a full disk: busy %d, %d of %d frames copied, %v; want SQLITE_FULL", busy, copied, frames, err)
	}
	// A write alone, and a batch of writes at once: each fails as a full disk.
	wantFull := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrStorageFull) || toolgate.ErrorCode(err) != toolgate.EStorageFull {
			t.Fatalf("%s on a full disk: %v (code %s), want ErrStorageFull with %s", what, err, toolgate.ErrorCode(err), toolgate.EStorageFull)
		}
	}
	var refusedKeys []string
	for i := 0; ; i++ {
		key := fmt.Sprintf("late-%d", i)
		err := put(key)
		if err == nil {
			if i > 100 {
				t.Fatalf("%d writes stored on a full disk", i)
			}
			continue // the WAL had room left
		}
		wantFull("a write", err)
		refusedKeys = append(refusedKeys, key)
		break
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		key := fmt.Sprintf("batch-%d", i)
		refusedKeys = append(refusedKeys, key)
		wg.Go(func() { errs[i] = put(key) })
	}
	wg.Wait()
	for _, err := range errs {
		wantFull("a write of a batch", err)
	}
	for _, key := range refusedKeys {
		if _, ok, err := st.Setting(ctx, key); err != nil || ok {
			t.Fatalf("setting %s after its write failed: stored=%v, %v", key, ok, err)
		}
	}

	// Space returns: the writer commits again, and the checkpoint completes.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("a write once space returned: %v", err)
	}
	if err := st.cp.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil || busy != 0 || copied != frames {
		t.Fatalf("checkpoint once space returned: busy %d, %d of %d frames copied, %v", busy, copied, frames, err)
	}
	if err := put("restarts the WAL"); err != nil {
		t.Fatal(err)
	}
	if frames := st.cp.checkpoint("PASSIVE"); frames >= 20 {
		t.Fatalf("the WAL holds %d frames after a completed checkpoint and one write; it did not start again", frames)
	}
	for _, key := range []string{"stored-0", "stored-199", "after", "restarts the WAL"} {
		if _, ok, err := st.Setting(ctx, key); err != nil || !ok {
			t.Fatalf("setting %s: stored=%v, %v", key, ok, err)
		}
	}
}

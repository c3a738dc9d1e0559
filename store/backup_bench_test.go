package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// BenchmarkWriteDuringBackup measures what a backup costs the gateway's
// writes: a database of TOOLGATE_BENCH_BACKUP_MB (256 by default) is
// filled, then one goroutine commits one small write after another (as
// each call's commit does) through the store's writer, first alone for as
// long as a backup takes, then while store.BackupSQLite copies the
// database and for afterBackup past its end. It reports the writes' median and largest latency in both
// phases (ms), the backup's time (s), the copy's size and the WAL's when
// the backup ends (MB).
//
//	TOOLGATE_BENCH_BACKUP_MB=1024 go test -run '^$' -bench WriteDuringBackup -benchtime 1x ./store
func BenchmarkWriteDuringBackup(b *testing.B) {
	mb := 256
	if v := os.Getenv("TOOLGATE_BENCH_BACKUP_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("TOOLGATE_BENCH_BACKUP_MB=%q", v)
		}
		mb = n
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	fillDatabase(b, path, mb)
	st, err := store.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.ResetTimer()
	for i := range b.N {
		target := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		// A first backup only to learn how long one takes.
		start := time.Now()
		if _, err := store.BackupSQLite(context.Background(), path, target, true); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		alone := writeLatencies(b, st, took, nil)
		var info store.BackupInfo
		var walBytes int64
		during := writeLatencies(b, st, 0, func() {
			var err error
			if info, err = store.BackupSQLite(context.Background(), path, target, true); err != nil {
				b.Error(err)
			}
			if fi, err := os.Stat(path + "-wal"); err == nil {
				walBytes = fi.Size()
			}
		})
		b.ReportMetric(percentile(alone, 50), "alone-p50-ms")
		b.ReportMetric(percentile(alone, 99), "alone-p99-ms")
		b.ReportMetric(percentile(alone, 100), "alone-max-ms")
		b.ReportMetric(percentile(during, 50), "backup-p50-ms")
		b.ReportMetric(percentile(during, 99), "backup-p99-ms")
		b.ReportMetric(percentile(during, 100), "backup-max-ms")
		b.ReportMetric(float64(len(during)), "writes-during")
		b.ReportMetric(info.Took.Seconds(), "backup-s")
		b.ReportMetric(float64(info.Bytes)/(1<<20), "copy-MB")
		b.ReportMetric(float64(walBytes)/(1<<20), "wal-at-end-MB")
		os.Remove(target)
	}
}

// fillDatabase makes a toolgate database of about mb MiB at path: rows of
// 2 KiB in the settings table, written in one transaction.
func fillDatabase(b *testing.B, path string, mb int) {
	st, err := store.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows := mb * 1024 / 2
	if _, err := db.Exec(`INSERT INTO settings (key, value)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		SELECT 'fill-' || i, hex(randomblob(1000)) FROM n`, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}

// afterBackup is how long writes are measured past the backup's end.
const afterBackup = 3 * time.Second

// writeLatencies commits one small write after another until backup
// returns (or, with no backup, for d) and returns each one's latency in ms.
func writeLatencies(b *testing.B, st *store.Store, d time.Duration, backup func()) []float64 {
	done := make(chan struct{})
	var wg sync.WaitGroup
	if backup != nil {
		wg.Add(1)
		// The writes go on for afterBackup past its end, which takes in
		// the checkpoint that catches up with the WAL grown meanwhile.
		go func() { defer wg.Done(); backup(); time.Sleep(afterBackup); close(done) }()
	} else {
		go func() { time.Sleep(d); close(done) }()
	}
	var lat []float64
	for i := 0; ; i++ {
		select {
		case <-done:
			wg.Wait()
			return lat
		default:
		}
		start := time.Now()
		err := st.Write(context.Background(), func(tx *store.Tx) error {
			return tx.PutSetting("probe-"+strconv.Itoa(i%1000), strconv.Itoa(i))
		})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
	}
}

// percentile returns the p-th percentile of v (p 100: the largest).
func percentile(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := len(s) * p / 100
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

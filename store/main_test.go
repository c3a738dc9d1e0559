package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pgtest"
)

// pg is the PostgreSQL server the package's tests share (a database
// each), started by the first test on PostgreSQL; where PostgreSQL is not
// installed those tests are skipped and the SQLite ones still run.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// onBothBackends runs test on SQLite, then on PostgreSQL, as subtests
// named "sqlite" and "postgres"; openStore and newTarget open the
// subtest's backend.
func onBothBackends(t *testing.T, test func(t *testing.T)) {
	t.Run("sqlite", test)
	t.Run("postgres", test)
}

// onPostgres reports whether t runs on PostgreSQL (see onBothBackends).
func onPostgres(t testing.TB) bool {
	return strings.Contains(t.Name(), "/postgres")
}

// newTarget returns a new empty database for t's backend to Open: a
// fresh PostgreSQL database (dropped after the test), or a SQLite file
// in t's temporary folder.
func newTarget(t testing.TB) string {
	t.Helper()
	if onPostgres(t) {
		return pg.Server(t).NewDatabase(t)
	}
	return filepath.Join(t.TempDir(), "toolgate.db")
}

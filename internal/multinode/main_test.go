package multinode_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/pgtest"
)

// pg is the PostgreSQL server every test of the package shares, started
// by the first; each test has a database of its own on it. Where
// PostgreSQL is not installed the tests are skipped (see pgtest).
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

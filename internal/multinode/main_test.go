package multinode_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolgate/toolgate/pgtest"
)

// pg is the PostgreSQL server every test of the package shares; each test
// has a database of its own on it.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	var err error
	pg, err = pgtest.Start(pgtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
	}
	os.Exit(code)
}

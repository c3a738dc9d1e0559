package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/pgtest"
)

// The server starts, a test database takes writes, a cut connection is
// ended, and Stop removes everything.
func TestServerLifecycle(t *testing.T) {
	s := pgtest.For(t, pgtest.Options{})
	ctx := context.Background()
	url := s.NewDatabase(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "pgtest-victim"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE t (x int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	n, err := s.CutConnections(ctx, "pgtest-victim")
	if err != nil || n != 1 {
		t.Fatalf("cut %d connections (%v), want 1", n, err)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a cut connection still answers")
	}
}

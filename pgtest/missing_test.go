package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pgtest"
)

// shared is started by TestNeedsPostgres only when this test binary runs
// as runMissing's child.
var shared pgtest.Shared

// TestNeedsPostgres is runMissing's child: a test that asks for a server
// the way the packages' tests do, once alone and once shared.
func TestNeedsPostgres(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "" {
		t.Skip("run by TestMissingPostgres")
	}
	t.Run("own", func(t *testing.T) { pgtest.For(t, pgtest.Options{}) })
	t.Run("shared", func(t *testing.T) { shared.Server(t).NewDatabase(t) })
}

// runMissing runs TestNeedsPostgres in a child process whose pgtest finds
// no server programs (TOOLGATE_PG_BIN is an empty folder), with
// TOOLGATE_TEST_POSTGRES set to require; it returns the child's output
// and whether it passed.
func runMissing(t *testing.T, require string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNeedsPostgres$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", pgtest.BinDirEnv+"="+t.TempDir(), pgtest.RequireEnv+"="+require)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// Without PostgreSQL's server programs a test that needs them is skipped,
// saying why and what to do; with TOOLGATE_TEST_POSTGRES=require it fails.
func TestMissingPostgres(t *testing.T) {
	out, passed := runMissing(t, "")
	if !passed || strings.Count(out, "--- SKIP") != 2 || !strings.Contains(out, "no PostgreSQL server binaries found (initdb)") {
		t.Errorf("without the programs (passed %v), want both tests skipped with the reason:\n%s", passed, out)
	}
	out, passed = runMissing(t, "require")
	if passed || strings.Count(out, "--- FAIL") < 2 || !strings.Contains(out, "no PostgreSQL server binaries found (initdb)") {
		t.Errorf("without the programs and %s=require (passed %v), want both tests failed:\n%s", pgtest.RequireEnv, passed, out)
	}
}

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// RequireEnv names the environment variable that, set to "require",
// makes a test that needs PostgreSQL fail where the server programs are
// not installed, instead of skipping.
const RequireEnv = "TOOLGATE_TEST_POSTGRES"

// Required reports whether the environment requires PostgreSQL's tests
// to run (RequireEnv=require).
func Required() bool { return os.Getenv(RequireEnv) == "require" }

// For starts a server for tb, stopped when tb ends. Where the server
// programs are not installed, tb is skipped saying so (failed when
// Required); any other failure to start fails tb.
func For(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := Start(opts)
	if err != nil {
		missing(tb, err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// missing ends tb for err, a failure to start: a skip when the programs
// are not installed and PostgreSQL is not required, a failure otherwise.
func missing(tb testing.TB, err error) {
	tb.Helper()
	switch {
	case !errors.Is(err, ErrNotInstalled):
		tb.Fatal(err)
	case Required():
		tb.Fatalf("%v; %s=require: PostgreSQL's tests must run", err, RequireEnv)
	default:
		tb.Skipf("%v, or set %s=require to fail instead of skipping", err, RequireEnv)
	}
}

// Shared is one server for the tests of a package, started by the first
// test that asks for it (none when no test does) and stopped by Stop,
// which the package's TestMain calls after m.Run (or by Run, which does
// both).
type Shared struct {
	// Options shape the server.
	Options Options

	once sync.Once
	srv  *Server
	err  error
}

// Server returns the shared server, starting it on first use; where it
// cannot start, tb is skipped or failed as by For (every later caller
// too).
func (s *Shared) Server(tb testing.TB) *Server {
	tb.Helper()
	s.once.Do(func() { s.srv, s.err = Start(s.Options) })
	if s.err != nil {
		missing(tb, s.err)
	}
	return s.srv
}

// Run runs the package's tests and then stops the server, and returns
// m.Run's exit code: a package's TestMain is os.Exit(shared.Run(m)).
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Stop stops the server if one was started, and returns Stop's error.
func (s *Shared) Stop() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Stop()
}

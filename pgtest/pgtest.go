// Package pgtest starts a throwaway PostgreSQL server for tests and
// benchmarks: Debian's own initdb and pg_ctl (package postgresql, which
// `make postgres` installs with apt-get), a data directory in a temporary
// folder, listening on loopback only, stopped and removed by Stop.
// Nothing is downloaded.
//
// A test asks for a server with For or Shared.Server: where the server
// programs are not installed the test is skipped, saying why, unless the
// environment sets TOOLGATE_TEST_POSTGRES=require (as CI does), which
// makes it a failure.
//
// As root, initdb refuses to run, so the server runs as the postgres user
// (runuser), which Debian's package creates.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options shape the server.
type Options struct {
	// Durable keeps fsync and synchronous commit on, as in production:
	// for benchmarks. Tests run without them, which is much faster and
	// loses nothing unless the machine itself stops.
	Durable bool
	// MaxConnections is the server's connection limit; 0 means 300.
	MaxConnections int
}

// Server is a running throwaway PostgreSQL server.
type Server struct {
	// Port is the loopback TCP port it listens on.
	Port int

	dir     string // the temporary folder: data/, the socket and log
	bin     string // the folder of initdb, pg_ctl, postgres
	asUser  string // "postgres" when this process is root, else ""
	opts    Options
	created atomic.Int64
}

// ErrNotInstalled is BinDir's error when no PostgreSQL server programs
// are found.
var ErrNotInstalled = errors.New("no PostgreSQL server binaries found (initdb): install Debian's postgresql (make postgres)")

// BinDirEnv names the environment variable that, when set, is the only
// folder BinDir looks in (an empty folder makes PostgreSQL missing).
const BinDirEnv = "TOOLGATE_PG_BIN"

// BinDir returns the folder holding Debian's PostgreSQL server programs
// (the newest version under /usr/lib/postgresql, else initdb's folder on
// PATH), or the folder TOOLGATE_PG_BIN names; ErrNotInstalled when
// initdb is in none of them.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
			return "", fmt.Errorf("%w (%s=%s)", ErrNotInstalled, BinDirEnv, dir)
		}
		return dir, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", ErrNotInstalled
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start creates a cluster in a new temporary folder and starts it.
func Start(opts Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolgate-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, opts: opts}
	if os.Geteuid() == 0 {
		s.asUser = "postgres"
		if err := chownTo(dir, s.asUser); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "toolgate", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 5 { // a free port may be taken again before the server binds it
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if lastErr = s.start(port, opts); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) start(port int, opts Options) error {
	maxConns := opts.MaxConnections
	if maxConns == 0 {
		maxConns = 300
	}
	settings := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=%d",
		port, s.dir, maxConns)
	if !opts.Durable {
		settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "-o", settings, "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	s.Port = port
	return nil
}

// run runs one of the server's programs, as the postgres user when root.
func (s *Server) run(program string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, program)
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// chownTo gives dir to the named user, so that the server running as that
// user can write there.
func chownTo(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("pgtest: running as root needs the %q user (apt-get install postgresql creates it): %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL returns the connection URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://toolgate@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Exec runs SQL statements on the server's maintenance database.
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// CreateDatabase creates a new empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.created.Add(1))
	if err := s.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.URL(name), nil
}

// NewDatabase is CreateDatabase for a test: a fresh database, dropped
// (its connections closed) when the test ends.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := s.CreateDatabase(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, _ := pgx.ParseConfig(url)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+cfg.Database+" WITH (FORCE)"); err != nil {
			tb.Logf("pgtest: drop database %s: %v", cfg.Database, err)
		}
	})
	return url
}

// CutConnections ends every connection whose application_name is name
// (as a network cut or a restarted database would), and returns how many
// there were.
func (s *Server) CutConnections(ctx context.Context, name string) (int, error) {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n)
	return n, err
}

// Halt stops the server (a fast shutdown: the sessions are ended, as by an
// operator's pg_ctl stop) and keeps its folder, so that Resume starts it
// again with everything it held: a database outage for a test.
func (s *Server) Halt() error {
	out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Resume starts the server Halt stopped again, on the same port.
func (s *Server) Resume() error { return s.start(s.Port, s.opts) }

// Stop stops the server at once and removes its folder.
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	if err != nil {
		err = fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

package multinode_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the checks
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// agentKey is every node's agent key: the nodes of one deployment share it.
const agentKey = "tga_multinode_agent_key"

// node is one `toolgate serve` process on the shared database, killable
// with SIGKILL and restartable on the same address.
type node struct {
	Name string // node1, node2, node3: also its application_name on PostgreSQL
	URL  string // e.g. http://127.0.0.1:41234

	t      testing.TB
	db     string // the database URL with this node's application_name
	args   []string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

// cluster is three nodes on one database.
type cluster struct {
	Nodes []*node
	DBURL string
	// DB reads the shared database for the checks.
	DB *sqlx.DB
}

// startCluster creates a database and starts n nodes on it, one after
// another's first start (the migrations run once), then checks that all
// of them serve. extraArgs are added to every node's flags.
func startCluster(t *testing.T, n int, extraArgs ...string) *cluster {
	t.Helper()
	c := &cluster{DBURL: pg.NewDatabase(t)}
	db, err := sqlx.Open("pgx", c.DBURL+"&application_name=multinode-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c.DB = db
	// Started together: the migrations must not race.
	var wg sync.WaitGroup
	c.Nodes = make([]*node, n)
	for i := range c.Nodes {
		c.Nodes[i] = &node{Name: fmt.Sprintf("node%d", i+1), t: t, db: c.DBURL + "&application_name=" + fmt.Sprintf("node%d", i+1), args: extraArgs}
	}
	errs := make([]error, n)
	for i, nd := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nd.start("127.0.0.1:0") }()
	}
	wg.Wait()
	for _, nd := range c.Nodes {
		t.Cleanup(func() {
			nd.Kill()
			if t.Failed() {
				t.Logf("%s log (last 200 lines):\n%s", nd.Name, nd.stderr.tail(200))
			}
		})
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (nd *node) start(addr string) error {
	args := append([]string{"serve", "--addr", addr, "--db", nd.db, "--agent-key", agentKey,
		"--log-level", "debug", "--session-rate", "0"}, nd.args...)
	cmd := exec.Command(gatewaytest.Binary(nd.t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if nd.stderr == nil {
		nd.stderr = &lockedBuffer{}
	}
	cmd.Stderr = nd.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start toolgate: %v", nd.Name, err)
	}
	nd.cmd = cmd
	nd.exited = make(chan struct{})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "toolgate serving on "); ok {
				urlc <- url
			}
		}
	}()
	exited := nd.exited
	go func() { cmd.Wait(); close(exited) }()
	select {
	case nd.URL = <-urlc:
		return nil
	case <-exited:
		nd.cmd = nil
		return fmt.Errorf("%s exited at start:\n%s", nd.Name, nd.stderr.tail(50))
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not start in 30s:\n%s", nd.Name, nd.stderr.tail(50))
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (nd *node) Kill() {
	if nd.cmd == nil {
		return
	}
	nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
	nd.cmd = nil
}

// Alive reports whether the process runs.
func (nd *node) Alive() bool { return nd.cmd != nil }

// Restart starts the node again on its address, killing it first if it
// still runs.
func (nd *node) Restart(t testing.TB) {
	t.Helper()
	nd.Kill()
	nd.stderr.WriteString(fmt.Sprintf("\n----- %s restarted -----\n", nd.Name))
	// Go's listeners set SO_REUSEADDR, so the address is free again at once.
	if err := nd.start(strings.TrimPrefix(nd.URL, "http://")); err != nil {
		t.Fatal(err)
	}
}

// Addr is the node's host:port.
func (nd *node) Addr() string { return strings.TrimPrefix(nd.URL, "http://") }

// queryInts reads one integer column.
func (c *cluster) queryInts(t *testing.T, query string, args ...any) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []int64
	if err := c.DB.SelectContext(ctx, &out, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) WriteString(s string) {
	b.Write([]byte(s))
}

// tail returns the last n lines written.
func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(b.buf.String(), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grep returns the lines written that contain s.
func (b *lockedBuffer) grep(s string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

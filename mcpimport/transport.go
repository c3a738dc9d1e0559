package mcpimport

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connection is one session with the server and, for a command, the
// process it runs in.
type connection struct {
	session *mcp.ClientSession
	cmd     *exec.Cmd         // nil over HTTP
	stdio   *trackedTransport // nil over HTTP
	stderr  *stderrLogger     // nil over HTTP
	grace   time.Duration     // StopGrace
}

// trackedTransport keeps the connection its transport made, so that the
// process behind it is ended (and waited for) even when the handshake
// fails after the command started.
type trackedTransport struct {
	mcp.Transport
	cmd  *exec.Cmd
	conn mcp.Connection
	pid  atomic.Int64 // the command's, once started
	// probeBound, when positive, is how long the server/discover probe
	// waits for its answer (probeConn); probe is the connection's then.
	probeBound time.Duration
	probe      *probeConn
}

// Connect implements mcp.Transport.
func (t *trackedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err == nil && t.probeBound > 0 {
		t.probe = newProbeConn(c, t.probeBound)
		c = t.probe
	}
	t.conn = c
	if t.cmd.Process != nil {
		t.pid.Store(int64(t.cmd.Process.Pid))
	}
	return c, err
}

// connect opens a session: over Streamable HTTP for a URL, else by
// starting the command and speaking to it over stdio. Connecting (the
// protocol's handshake included) is bounded by ConnectTimeout.
func (s *Server) connect(ctx context.Context) (*connection, error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	conn := &connection{}
	var transport mcp.Transport
	var sessOpts *mcp.ClientSessionOptions
	if s.cfg.IsHTTP() {
		// The client's transport bounds each message at messageBound; the
		// SDK's own bound on an event is a backstop it never reaches.
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.Target, HTTPClient: s.httpClient, MaxEventSize: 2 * s.messageBound}
	} else {
		conn.stderr = newStderrLogger(s.log, s.stderrLimit)
		conn.stderr.redact = s.redactText
		conn.cmd = shellCommand(s.cfg.Target)
		conn.cmd.Env = commandEnv(s.cfg.Env, os.LookupEnv)
		conn.cmd.Stderr = conn.stderr
		// Wait gives up on the stderr pipe this long after the process
		// exited (a grandchild may hold it open).
		conn.cmd.WaitDelay = s.opts.StopGrace
		conn.grace = s.opts.StopGrace
		// The transport's own SIGTERM (to the shell alone) comes no
		// earlier than close's SIGKILL, which the whole process group gets.
		conn.stdio = &trackedTransport{Transport: &mcp.CommandTransport{Command: conn.cmd, TerminateDuration: 2 * s.opts.StopGrace}, cmd: conn.cmd}
		if s.legacyStdio {
			sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocolVersion}
		} else {
			conn.stdio.probeBound = s.opts.DiscoverTimeout
		}
		transport = conn.stdio
		// A command that has not answered in time, or that the gateway
		// stops waiting for, is killed at once, not given the grace of
		// a clean close.
		giveUp := context.AfterFunc(cctx, func() { killProcessGroup(int(conn.stdio.pid.Load())) })
		defer giveUp()
	}
	cs, err := s.client.Connect(cctx, transport, sessOpts)
	if err == nil && conn.stdio != nil && cctx.Err() != nil {
		cs.Close() // connected just as the time ran out: the kill may have come
		err = cctx.Err()
	}
	exitedOnProbe := s.noteProbe(conn.stdio)
	if err != nil {
		killProcessGroup(conn.pid()) // no grace for a server that failed its handshake
		conn.endProcess()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if exitedOnProbe {
			return s.connect(ctx) // once: legacyStdio is set now
		}
		conn.stderr.startFailed()
		return nil, fmt.Errorf("connecting: %w", err)
	}
	conn.session = cs
	return conn, nil
}

// close ends the session. Over stdio, the command's stdin is closed; it
// gets StopGrace to exit, then its process group gets SIGTERM, and
// StopGrace later SIGKILL; once it has been waited for, whatever is left
// of its process group is killed.
func (c *connection) close() {
	if pid := c.pid(); pid > 0 {
		term := time.AfterFunc(c.grace, func() { terminateProcessGroup(pid) })
		kill := time.AfterFunc(2*c.grace, func() { killProcessGroup(pid) })
		defer term.Stop()
		defer kill.Stop()
	}
	if c.session != nil {
		c.session.Close()
	}
	c.endProcess()
}

// endProcess makes sure the command has ended and been waited for (closing
// its connection is idempotent), kills what is left of its process group,
// and logs the rest of its stderr.
func (c *connection) endProcess() {
	if c.stdio == nil {
		return
	}
	if c.stdio.conn != nil {
		c.stdio.conn.Close()
	}
	killProcessGroup(c.pid())
	c.stderr.flush()
}

// pid is the command's process id, 0 before it started.
func (c *connection) pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// noteProbe keeps, for the next connections, that the command did not
// answer its server/discover probe (legacyStdio), and reports whether it
// exited on it.
func (s *Server) noteProbe(t *trackedTransport) (exited bool) {
	if t == nil || t.probe == nil {
		return false
	}
	switch t.probe.Verdict() {
	case probeIgnored:
		s.legacyStdio = true
		s.log.Info("MCP server did not answer server/discover; spoken to with initialize from now on", "waited", s.opts.DiscoverTimeout, "protocol_version", legacyProtocolVersion)
	case probeExited:
		s.legacyStdio = true
		s.log.Info("MCP server exited on server/discover; started again and spoken to with initialize from now on", "protocol_version", legacyProtocolVersion)
		return true
	}
	return false
}

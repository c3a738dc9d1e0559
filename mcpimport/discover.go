package mcpimport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's client opens a session with the server/discover request of
// the 2026-07-28 revision, and falls back to the initialize handshake of
// 2025-11-25 when the server answers it with an error. Over stdio, a
// server of an older SDK may instead ignore the request, or exit on it.
// As the official TypeScript client does on stdio, the gateway takes
// both for a server that speaks only the older revision: a probe left
// unanswered for Options.DiscoverTimeout gets an error made up here (so
// the SDK goes on to initialize on the same pipe), and a command that
// exits while the probe waits is started again at once, with initialize
// alone. Either verdict is kept for the Server's later connections.

// methodDiscover is the request the SDK's client probes with.
const methodDiscover = "server/discover"

// legacyProtocolVersion is the revision a command that does not answer
// server/discover is spoken to in (initialize, no probe).
const legacyProtocolVersion = "2025-11-25"

// probeVerdict is what became of a connection's server/discover probe.
type probeVerdict int

const (
	probeNone     probeVerdict = iota // not sent, or still waiting
	probeAnswered                     // a result, or an error (the SDK falls back itself)
	probeIgnored                      // no answer within the bound: answered here
	probeExited                       // the connection ended while it waited
)

// probeConn watches a stdio connection's server/discover probe: it
// answers it with an error when the server has not within bound, drops
// the server's late answer, and records what became of it.
type probeConn struct {
	mcp.Connection
	bound time.Duration

	startRead sync.Once
	msgs      chan readResult // what the connection's Read gave, in order
	injected  chan jsonrpc.Message
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	pending *jsonrpc.ID // the probe waiting for its answer
	dropID  *jsonrpc.ID // the probe answered here: its late answer is dropped
	timer   *time.Timer
	verdict probeVerdict
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func newProbeConn(c mcp.Connection, bound time.Duration) *probeConn {
	return &probeConn{
		Connection: c,
		bound:      bound,
		msgs:       make(chan readResult),
		injected:   make(chan jsonrpc.Message, 1),
		closed:     make(chan struct{}),
	}
}

// Verdict is what became of the probe so far.
func (p *probeConn) Verdict() probeVerdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verdict
}

// Write implements mcp.Connection: a server/discover call starts the
// probe's clock.
func (p *probeConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodDiscover && req.IsCall() {
		id := req.ID
		p.mu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		p.pending, p.verdict = &id, probeNone
		p.timer = time.AfterFunc(p.bound, func() { p.unanswered(id) })
		p.mu.Unlock()
	}
	return p.Connection.Write(ctx, msg)
}

// unanswered answers the probe id with an error, if it still waits.
func (p *probeConn) unanswered(id jsonrpc.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil || *p.pending != id {
		return
	}
	p.pending, p.dropID, p.verdict = nil, &id, probeIgnored
	select {
	case p.injected <- &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("%s not answered within %s", methodDiscover, p.bound),
	}}:
	default:
	}
}

// Read implements mcp.Connection.
func (p *probeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	p.startRead.Do(func() { go p.readLoop() })
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case msg := <-p.injected:
			return msg, nil
		case r, ok := <-p.msgs:
			if !ok {
				return nil, fmt.Errorf("connection closed")
			}
			if p.take(r) {
				return r.msg, r.err
			}
		}
	}
}

// take records what r says of the probe, and reports whether r goes on
// to the SDK (a late answer to a probe answered here does not).
func (p *probeConn) take(r readResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.err != nil {
		// The probe was still waiting, or answered here while the server
		// had not read it yet (a slow start): either way the server
		// exited on it.
		if p.pending != nil || p.verdict == probeIgnored {
			p.pending, p.verdict = nil, probeExited
			p.timer.Stop()
		}
		return true
	}
	resp, ok := r.msg.(*jsonrpc.Response)
	if !ok {
		return true
	}
	switch {
	case p.pending != nil && resp.ID == *p.pending:
		p.pending, p.verdict = nil, probeAnswered
		p.timer.Stop()
	case p.dropID != nil && resp.ID == *p.dropID:
		p.dropID = nil
		return false
	}
	return true
}

// readLoop reads the connection until it fails or is closed.
func (p *probeConn) readLoop() {
	defer close(p.msgs)
	for {
		msg, err := p.Connection.Read(context.Background())
		select {
		case p.msgs <- readResult{msg, err}:
		case <-p.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// Close implements mcp.Connection.
func (p *probeConn) Close() error {
	p.closeOnce.Do(func() {
		close(p.closed)
		p.mu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		p.mu.Unlock()
	})
	return p.Connection.Close()
}

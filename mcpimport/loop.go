package mcpimport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// run is the connection loop: connect, serve the connection until it ends,
// mark the server offline, wait the backoff, again, until ctx ends.
func (s *Server) run(ctx context.Context) {
	defer close(s.done)
	delay := s.opts.MinBackoff
	for {
		lasted, err := s.serveConnection(ctx)
		if ctx.Err() != nil {
			return
		}
		why := s.redactText(err.Error()) // it may quote the server
		s.setOffline(why)
		if lasted >= s.opts.MaxBackoff {
			delay = s.opts.MinBackoff
		}
		s.log.Warn("MCP server unreachable; trying again", "err", why, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, s.opts.MaxBackoff)
	}
}

// serveConnection connects, lists the tools, and keeps the connection
// until it ends (the error says why) or ctx ends (nil). It returns how
// long the server was online. The connection is closed, and a command's
// process group ended, before it returns.
func (s *Server) serveConnection(ctx context.Context) (time.Duration, error) {
	conn, err := s.connect(ctx)
	if err != nil {
		return 0, err
	}
	up := false
	defer func() {
		conn.close()
		if !up {
			conn.stderr.startFailed()
		}
	}()
	if err := s.refresh(ctx, conn.session); err != nil {
		return 0, err
	}
	up = true
	conn.stderr.cameOnline()
	online := time.Now()
	ended := make(chan error, 1)
	go func() { ended <- conn.session.Wait() }() // returns once conn.close has run at the latest
	ticker := time.NewTicker(s.opts.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Since(online), nil
		case err := <-ended:
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return time.Since(online), fmt.Errorf("the connection ended: %w", err)
		case <-s.relist:
		case <-s.check:
		case <-ticker.C:
		}
		if err := s.refresh(ctx, conn.session); err != nil {
			return time.Since(online), err
		}
	}
}

// refresh lists the server's tools and records them. A server that
// answers with an error keeps its last list (and counts as up); one that
// does not answer is down: the error is returned.
func (s *Server) refresh(ctx context.Context, cs *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	listed, err := s.listTools(lctx, cs)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if !answered(err) {
			return fmt.Errorf("listing its tools: %w", err)
		}
		s.log.Warn("MCP server refused to list its tools; keeping the last list", "err", s.redactText(err.Error()))
		s.setOnline(cs, s.Tools())
		return nil
	}
	s.setOnline(cs, s.convertTools(listed))
	return nil
}

// maxListPages bounds the pages of one listing, against a server that
// hands out cursors forever.
const maxListPages = 1000

// listTools reads every page of tools/list, at most MaxTools tools.
func (s *Server) listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxListPages {
			s.log.Warn("MCP server's tool list has too many pages; the rest is left out", "pages", maxListPages)
			return out, nil
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if len(out) == s.opts.MaxTools {
				s.log.Warn("MCP server lists more tools than the gateway takes; the rest is left out", "max_tools", s.opts.MaxTools)
				return out, nil
			}
			if t != nil {
				out = append(out, t)
			}
		}
		if res.NextCursor == "" {
			return out, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// The codes of the JSON-RPC errors the SDK makes up itself, when a
// request did not reach the server or had no answer: "rejected by
// transport" (an HTTP request that failed), "client is closing", "server
// is closing".
const (
	codeRejectedByTransport = -32005
	codeClientClosing       = -32003
	codeServerClosing       = -32004
)

// answered reports whether err is the server's own answer (a JSON-RPC
// error), which shows that it is up, rather than a failure to reach it.
func answered(err error) bool {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return false
	}
	switch werr.Code {
	case codeRejectedByTransport, codeClientClosing, codeServerClosing:
		return false
	}
	return true
}

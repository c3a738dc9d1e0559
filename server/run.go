package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate/agenthost"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/clientaddr"
	"github.com/toolgate/toolgate/internal/jsonhttp"
	"github.com/toolgate/toolgate/mcpserve"
	"github.com/toolgate/toolgate/store"
)

// Server is the gateway process: the store, the engine, the agent loop and
// the HTTP server around them. Open opens it, Listen binds its address,
// Serve serves until its context ends, and Close releases it (see the
// package doc).
type Server struct {
	Config Config
	Store  *store.Store
	Engine *Engine
	Agent  *Agent

	tools *agenthost.Tools // the tools inside the gateway, built before the engine
	log   *slog.Logger
	api   *handlers.API
	mcp   *mcpserve.Endpoint // /mcp and /mcp/sessions/{sid}
	http  *http.Server
	// overTLS is whether Serve serves HTTPS (the Config names a
	// certificate). Not read from http.TLSConfig: net/http sets that
	// field itself when it sets up HTTP/2, also for plain HTTP.
	overTLS bool
	cancel  context.CancelFunc // ends streams and held requests at shutdown

	mu       sync.Mutex
	listener net.Listener // set by Listen
	closed   bool         // Close was called; Listen refuses

	shutdownOnce sync.Once
	shutdownErr  error
	closeOnce    sync.Once
	closeErr     error
}

// Open opens the database, recovers the engine's state (whose deadline
// and sweep goroutines start with it), builds the agent loop and the HTTP
// handler, and resumes the runs and built-in calls a stopped process left
// open. It binds no address: Listen or Serve does. A nil log discards the
// gateway's log lines. When a step fails, what the earlier steps opened is
// released again.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tlsConfig, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		warnIfNotValidNow(log, tlsConfig.Certificates[0], cfg.TLSCert, time.Now())
	}
	s := &Server{Config: cfg, log: log, overTLS: tlsConfig != nil}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	st, err := store.Open(cfg.DBPath, log)
	if err != nil {
		return fail(err)
	}
	s.Store = st
	p, err := build(ctx, cfg, st, log)
	if err != nil {
		return fail(err)
	}
	s.tools, s.Engine, s.Agent = p.tools, p.engine, p.agent
	eng, agent := p.engine, p.agent
	s.mcp = mcpserve.New(mcpserve.Options{
		Auth:              eng,
		Sessions:          eng.Sessions,
		Tools:             eng.Tools,
		Calls:             eng.Calls,
		Guard:             agenthost.MCPGuard{Remote: eng.Tools, Tools: p.tools, ClientKey: cfg.ClientKey},
		Log:               log,
		AllowedOrigins:    cfg.AllowedOrigins,
		MaxBodyBytes:      cfg.MaxBodyBytes,
		Heartbeat:         cfg.Heartbeat,
		Tasks:             st.MCPTasks(),
		MaxTaskTTL:        cfg.MCPTaskMaxTTL,
		SessionStore:      st.MCPSessions(),
		SessionIdle:       cfg.MCPSessionIdle,
		MaxSessionsPerKey: cfg.MaxMCPSessionsPerKey,
	})
	mountAgent := handlers.MountAgent(agent, cfg.runStartLimit())
	s.api = handlers.New(handlers.Options{
		Auth:        eng,
		SessionAuth: eng.Sessions,
		Sessions:    eng.Sessions,
		Tools:       eng.Tools,
		Delivery:    eng.Delivery,
		Answers:     eng.Delivery,
		Calls:       eng.Calls,
		Mount: func(r handlers.Router, api *handlers.API) {
			mountAgent(r, api)
			s.mcp.Mount(r)
		},
		Metrics:        p.metrics.handler(),
		AllowedOrigins: cfg.AllowedOrigins,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Heartbeat:      cfg.Heartbeat,
		MinHeartbeat:   cfg.MinHeartbeat,
		PollWait:       cfg.PollWait,
		MaxPollWait:    cfg.MaxPollWait,
		MaxCallWait:    cfg.MaxTimeout,

		MaxStreamSessions: cfg.MaxStreamSessions,
		SessionLimit:      cfg.sessionLimit(),

		ListenAddr:      cfg.Addr,
		AllowedHosts:    cfg.AllowedHosts,
		BodyReadTimeout: cfg.BodyReadTimeout,
		// Behind a trusted proxy, the share of connections one client
		// address may hold is kept per request (see connshare.go).
		ProxiedAddressShare: cfg.connectionsPerAddress(connectionLimit(cfg.MaxConnections)),
	})
	baseCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.http = &http.Server{
		Handler: s.api,
		// The headers, then (handlers.Options.BodyReadTimeout) the body,
		// must each arrive within the body read timeout: a client that
		// trickles them in is cut off after seconds. No ReadTimeout:
		// streams and held polls live long once their request is read.
		ReadHeaderTimeout: cfg.BodyReadTimeout,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return jsonhttp.WithLogger(baseCtx, log) },
		// With a certificate, Serve serves TLS and net/http negotiates
		// HTTP/2 or HTTP/1.1 with each client (TLSNextProto and Protocols
		// are left unset, which keeps HTTP/2 on).
		TLSConfig: tlsConfig,
	}
	// Runs and built-in calls a stopped process left open go on now; a run
	// waiting on a remote call goes on when its client answers.
	if err := agent.Resume(ctx); err != nil {
		log.Error("resume agent work", "err", err)
	}
	// The imported MCP servers connect now, after resume (see
	// Tools.StartImports); Close stops them.
	p.tools.StartImports(log)
	return s, nil
}

// Listen binds the configured address (port 0 picks a free port; URL
// tells which). Serve calls it when it has not been called. The listener
// holds at most Config.MaxConnections connections at once (see
// connlimit.go); more wait in the kernel's accept queue.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("listen: the server is closed")
	}
	if s.listener != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.Config.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.Config.Addr, err)
	}
	limit := connectionLimit(s.Config.MaxConnections)
	share := s.Config.connectionsPerAddress(limit)
	s.log.Info("connection limit", "max_connections", limit, "max_connections_per_address", share)
	trusted, _ := clientaddr.ParseTrustedProxies(s.Config.TrustedProxies) // checked by Validate
	s.listener = limitConnections(shareConnections(ln, share, trusted, s.log), limit, s.log)
	return nil
}

// URL is the base URL the gateway serves on, once Listen has bound its
// address ("" before).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	if s.overTLS {
		return "https://" + s.listener.Addr().String()
	}
	return "http://" + s.listener.Addr().String()
}

// Serve binds the address if Listen has not, starts the stream workers and
// serves until ctx ends or Close is called. It then shuts the HTTP side
// down gracefully: streams and held polls end (clients reconnect to the
// next process) and requests in flight finish within the shutdown
// timeout. The engine and the database stay open until Close.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.api.Start()
	s.mcp.Start()
	errc := make(chan error, 1)
	go func() {
		if s.overTLS {
			// The certificate is in TLSConfig; ServeTLS adds "h2" and
			// "http/1.1" to the protocols the handshake offers.
			errc <- s.http.ServeTLS(s.listener, "", "")
			return
		}
		errc <- s.http.Serve(s.listener)
	}()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	err := s.shutdownHTTP()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(serveErr, err)
	}
	return err
}

// shutdownHTTP ends serving, once: held requests and streams end, and
// requests in flight get the shutdown timeout to finish.
func (s *Server) shutdownHTTP() error {
	s.shutdownOnce.Do(func() {
		s.log.Info("shutting down")
		s.cancel()
		s.api.Close() // streams taken over from net/http end here
		s.mcp.Close() // MCP sessions end, and their streams
		shutdownCtx, cancel := context.WithTimeout(context.Background(), s.Config.ShutdownTimeout)
		defer cancel()
		s.shutdownErr = s.http.Shutdown(shutdownCtx)
		s.mu.Lock()
		if s.listener != nil {
			s.listener.Close() // bound but never served; already closed otherwise
		}
		s.mu.Unlock()
	})
	return s.shutdownErr
}

// Close stops serving if Serve still runs, then stops the engine, waits
// for the agent's runs to stop, commits pending writes and closes the
// database. It may be called after a failed Open step, and more than once
// (later calls return the first call's result).
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		var err error
		if s.http != nil {
			err = s.shutdownHTTP()
		}
		if s.Engine != nil {
			s.Engine.Close()
		}
		if s.tools != nil {
			s.tools.Close()
		}
		if s.Agent != nil {
			s.Agent.Wait()
		}
		if s.Store != nil {
			err = errors.Join(err, s.Store.Close())
		}
		s.closeErr = err
	})
	return s.closeErr
}

// warnIfNotValidNow logs a warning when the certificate served is expired
// or not valid yet: the gateway serves it all the same (a renewed file is
// taken at the next start), but clients will refuse it.
func warnIfNotValidNow(log *slog.Logger, cert tls.Certificate, file string, now time.Time) {
	leaf := cert.Leaf
	if leaf == nil {
		return
	}
	if now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		log.Warn("the TLS certificate is not valid now; clients will refuse it",
			"file", file, "not_before", leaf.NotBefore, "not_after", leaf.NotAfter)
	}
}

// Handler returns the gateway's HTTP handler, for serving it on another
// listener as well (tests serve it over HTTP/2 with TLS).
func (s *Server) Handler() http.Handler { return s.api }

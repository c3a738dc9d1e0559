package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/store"
)

// Server is a running gateway: the store, the engine and the HTTP server.
type Server struct {
	Config Config
	Store  *store.Store
	Engine *Engine
	Agent  *Agent

	log      *slog.Logger
	listener net.Listener
	http     *http.Server
	api      *handlers.API
	cancel   context.CancelFunc // ends streams and held requests at shutdown
}

// New opens the database, recovers the engine's state, binds the listen
// address and resumes the runs a stopped process left running; Serve then
// serves until its context ends.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	st, err := store.Open(cfg.DBPath)
	if err != nil {
		return nil, err
	}
	eng, err := NewEngine(ctx, cfg, st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	agent, err := newAgent(eng, cfg, log)
	if err != nil {
		eng.Close()
		st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		eng.Close()
		st.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	baseCtx, cancel := context.WithCancel(context.Background())
	s := &Server{Config: cfg, Store: st, Engine: eng, Agent: agent, log: log, listener: ln, cancel: cancel}
	api := handlers.New(handlers.Options{
		Engine:         eng,
		Mount:          handlers.MountAgent(agent),
		Metrics:        eng.MetricsHandler(),
		AllowedOrigins: cfg.AllowedOrigins,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Heartbeat:      cfg.Heartbeat,
		PollWait:       cfg.PollWait,
		MaxPollWait:    cfg.MaxPollWait,
		MaxCallWait:    cfg.MaxTimeout,
	})
	s.api = api
	s.http = &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	// Runs and built-in calls a stopped process left open go on now; a run
	// waiting on a remote call goes on when its client answers.
	if err := agent.resume(ctx); err != nil {
		log.Error("resume agent work", "err", err)
	}
	return s, nil
}

// URL is the base URL the gateway serves on.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Serve serves until ctx ends, then shuts down gracefully: streams and
// held polls end (clients reconnect to the next process), requests in
// flight finish within the shutdown timeout, pending writes are committed
// and the database is closed.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.listener) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.log.Info("shutting down")
	s.cancel()
	s.api.Close() // streams taken over from net/http end here
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.Config.ShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(shutdownCtx)
	s.Engine.Close()
	s.Agent.wait()
	err = errors.Join(err, s.Store.Close())
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(serveErr, err)
	}
	return err
}

// Handler returns the gateway's HTTP handler, for serving it on another
// listener as well (tests serve it over HTTP/2 with TLS).
func (s *Server) Handler() http.Handler { return s.api }

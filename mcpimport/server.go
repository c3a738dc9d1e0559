package mcpimport

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/toolgate/toolgate"
)

// Options tune a Server; zero fields take the defaults named.
type Options struct {
	// Log receives the connection's ups and downs, the tools skipped, and
	// the command's stderr; nil discards.
	Log *slog.Logger
	// MinBackoff (250ms) is the wait before the first new attempt after
	// the connection ended; it doubles at each failed attempt up to
	// MaxBackoff (30s), and starts again at MinBackoff after a connection
	// that lasted MaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// CheckInterval (15s) is how often a connected server's tools are
	// listed again, which also tells whether it still answers.
	CheckInterval time.Duration
	// ConnectTimeout (60s) bounds starting a command or reaching a URL,
	// and the protocol's handshake (npx may download its package first).
	ConnectTimeout time.Duration
	// RequestTimeout (20s) bounds each listing of the tools.
	RequestTimeout time.Duration
	// DiscoverTimeout (5s) is how long a command has to answer the
	// server/discover probe the session opens with before it is taken
	// for a server of the 2025-11-25 revision and spoken to with
	// initialize (see discover.go).
	DiscoverTimeout time.Duration
	// StopGrace (2s) is how long a command has to exit once its stdin is
	// closed, and again after SIGTERM, before it is killed.
	StopGrace time.Duration
	// MaxTools (1000) is the most tools taken from one server; more are
	// left out with a warning.
	MaxTools int
	// MaxResultBytes (1 MiB) bounds a call's output as JSON; a larger
	// result fails the call with PAYLOAD_TOO_LARGE. Of a Streamable HTTP
	// server, the gateway reads no more than 4 times this of one message
	// (a response, or an event of a stream): past it the call fails
	// PAYLOAD_TOO_LARGE without the rest being read.
	MaxResultBytes int
	// Redact, when set, is what everything the server sends back passes
	// before it reaches a caller, a run's events or the log: a call's
	// error message and details, why the server is offline, its refusals
	// and its stderr lines (a server may repeat a secret the gateway
	// sent it). It takes and returns a JSON value, keeping its shape;
	// the server wires the output guard's redaction. A call's output is
	// not passed: the call's record keeps it as the tool returned it.
	Redact func(json.RawMessage) json.RawMessage
	// HTTPClient reaches a Streamable HTTP server; nil uses a client of
	// the Server's own (whose idle connections Close drops), with no
	// overall timeout (streams are long-lived).
	HTTPClient *http.Client
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur(&o.MinBackoff, 250*time.Millisecond)
	setDur(&o.MaxBackoff, 30*time.Second)
	setDur(&o.CheckInterval, 15*time.Second)
	setDur(&o.ConnectTimeout, 60*time.Second)
	setDur(&o.RequestTimeout, 20*time.Second)
	setDur(&o.StopGrace, 2*time.Second)
	setDur(&o.DiscoverTimeout, 5*time.Second)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxTools <= 0 {
		o.MaxTools = 1000
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 1 << 20
	}
	return o
}

// Server is one imported MCP server: the connection to it, kept by a loop
// that Start starts and Close stops, and its tools, an toolgate.ToolSet.
type Server struct {
	cfg    Config
	opts   Options
	log    *slog.Logger
	client *mcp.Client

	// Signals to the connection loop, coalesced (capacity 1).
	relist chan struct{} // the server said its tools changed
	check  chan struct{} // a call failed as if the server were gone

	progress progressRoutes // the calls in flight, by progress token

	stderrLimit *rate.Limiter // of a command's stderr lines in the log

	// legacyStdio: the command did not answer server/discover once (it
	// ignored it, or exited on it); its next connections skip the probe.
	// Only the connection loop touches it.
	legacyStdio bool

	// leftOut are the tools of the last listing the gateway could not
	// take, with why; only the connection loop touches it.
	leftOut map[string]string
	// httpClient reaches a Streamable HTTP server: Options.HTTPClient
	// with its messages bounded (boundedTransport) at messageBound;
	// tooLargeMark marks the errors that stand for a response over it.
	httpClient   *http.Client
	messageBound int
	tooLargeMark json.RawMessage
	// ownHTTP is the transport of the HTTP client New made (nil when
	// Options.HTTPClient was given); Close drops its idle connections.
	ownHTTP *http.Transport

	mu       sync.Mutex
	tools    []toolgate.Tool    // sorted by name; kept while offline
	session  *mcp.ClientSession // nil while offline
	downWhy  string             // why it is offline, for TOOL_OFFLINE
	listed   bool               // the tools were listed once
	settled  chan struct{}      // closed once listed, or the first attempt failed, or closed
	watchers []func()
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when the loop has ended
}

// New returns the Server of cfg, offline until Start connects it. cfg
// must be valid (Config.Validate).
func New(cfg Config, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		cfg:     cfg,
		opts:    opts,
		log:     opts.Log.With("mcp_server", cfg.Name),
		relist:  make(chan struct{}, 1),
		check:   make(chan struct{}, 1),
		downWhy: "not connected yet",
		settled: make(chan struct{}),
		done:    make(chan struct{}),

		stderrLimit: newStderrLimit(),
	}
	if s.opts.HTTPClient == nil {
		s.ownHTTP = http.DefaultTransport.(*http.Transport).Clone()
		s.opts.HTTPClient = &http.Client{Transport: s.ownHTTP}
	}
	s.messageBound = messageBoundFactor * s.opts.MaxResultBytes
	s.httpClient, s.tooLargeMark = newBoundedClient(s.opts.HTTPClient, s.messageBound, s.log)
	s.client = mcp.NewClient(&mcp.Implementation{Name: "toolgate", Version: "1"}, &mcp.ClientOptions{
		// No capability: the gateway offers an imported server no roots,
		// sampling or elicitation (the SDK would declare roots, with an
		// empty list), so a server that asks gets an error.
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { signal(s.relist) },
		ProgressNotificationHandler: s.progressNotified,
	})
	return s
}

// Name is the server's NAME.
func (s *Server) Name() string { return s.cfg.Name }

// Start starts the connection loop (once).
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(ctx)
}

// Close stops the connection loop and waits for it: the session is
// closed, and a command's process group ended. The tools stay listed,
// offline. Close may be called more than once, and without Start.
func (s *Server) Close() error {
	s.mu.Lock()
	started, already := s.started, s.stopped
	s.stopped = true
	cancel := s.cancel
	s.mu.Unlock()
	if already {
		return nil
	}
	if started {
		cancel()
		<-s.done
	}
	if s.ownHTTP != nil {
		s.ownHTTP.CloseIdleConnections()
	}
	s.setOffline("the gateway is shutting down")
	return nil
}

var (
	_ toolgate.ToolSet = (*Server)(nil)
	_ toolgate.Listing = (*Server)(nil)
)

// Prefix implements toolgate.ToolSet: "NAME__".
func (s *Server) Prefix() string { return s.cfg.Name + "__" }

// Source implements toolgate.ToolSet: {kind: mcp, server: NAME}.
func (s *Server) Source() toolgate.ToolSource {
	return toolgate.ToolSource{Kind: toolgate.SourceMCP, Server: s.cfg.Name}
}

// Tools implements toolgate.ToolSet: the last list the server gave,
// sorted by name, also while it is offline.
func (s *Server) Tools() []toolgate.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]toolgate.Tool(nil), s.tools...)
}

// Online implements toolgate.ToolSet.
func (s *Server) Online() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != nil
}

// Watch implements toolgate.ToolSet.
func (s *Server) Watch(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, fn)
}

// AwaitListing implements toolgate.Listing: it waits until the server's
// tools are listed, or its first connection attempt failed, or Close, or
// until ctx ends, and returns nil once they are listed, else the
// TOOL_OFFLINE error of tool.
func (s *Server) AwaitListing(ctx context.Context, tool string) error {
	select {
	case <-s.settled:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed {
		return nil
	}
	return s.offlineErrorLocked(tool)
}

// settleLocked marks the first attempt over (AwaitListing); s.mu is held.
func (s *Server) settleLocked() {
	select {
	case <-s.settled:
	default:
		close(s.settled)
	}
}

// offlineError is the TOOL_OFFLINE error a call of one of the tools gets
// while the server is down; nil while it is up.
func (s *Server) offlineError(tool string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return nil
	}
	return s.offlineErrorLocked(tool)
}

func (s *Server) offlineErrorLocked(tool string) error {
	return toolgate.Errorf(toolgate.EToolOffline,
		"%s cannot be called now: the MCP server %s is offline (%s); the gateway reconnects it and its tools come back by themselves",
		tool, s.cfg.Name, s.downWhy).WithDetails(map[string]any{"server": s.cfg.Name})
}

// currentSession returns the session calls go through, or the
// TOOL_OFFLINE error.
func (s *Server) currentSession(tool string) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil, s.offlineErrorLocked(tool)
	}
	return s.session, nil
}

// setOnline records a new tool list (and the session it came from) and
// tells the watchers when anything changed.
func (s *Server) setOnline(cs *mcp.ClientSession, tools []toolgate.Tool) {
	s.mu.Lock()
	changed := s.session == nil || !sameTools(s.tools, tools)
	wasOffline := s.session == nil
	s.session, s.tools, s.listed = cs, tools, true
	s.settleLocked()
	watchers := append([]func(){}, s.watchers...)
	s.mu.Unlock()
	if wasOffline {
		s.log.Info("MCP server online", "tools", len(tools))
	}
	if changed {
		for _, fn := range watchers {
			fn()
		}
	}
}

// setOffline marks the server down, its tools kept, and tells the
// watchers when it was up.
func (s *Server) setOffline(why string) {
	s.mu.Lock()
	wasOnline := s.session != nil
	s.session, s.downWhy = nil, why
	s.settleLocked()
	watchers := append([]func(){}, s.watchers...)
	s.mu.Unlock()
	if wasOnline {
		for _, fn := range watchers {
			fn()
		}
	}
}

// signal wakes whoever reads ch, without blocking: one pending signal
// stands for any number.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// String names the server in messages.
func (s *Server) String() string { return fmt.Sprintf("MCP server %s (%s)", s.cfg.Name, s.cfg.Target) }

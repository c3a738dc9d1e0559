package mcpserve

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
	"github.com/toolgate/toolgate/outputsafety"
)

// MCP's HTTP headers the endpoint reads.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	// headerMethod is the request's JSON-RPC method, which the SDK
	// requires on 2026-07-28 requests and checks against the body's.
	headerMethod = "Mcp-Method"
)

// methodListen is the 2026-07-28 request whose reply is a long-lived
// stream of list changes.
const methodListen = "subscriptions/listen"

// statelessRevision is the first protocol revision without sessions: a
// request that declares it (or a later one) in Mcp-Protocol-Version is
// served by the stateless SDK handler.
const statelessRevision = "2026-07-28"

// codeTooManySessions is the error code of a new stateful MCP session
// refused because MaxSessions are alive (503, Retry-After).
const codeTooManySessions = "TOO_MANY_MCP_SESSIONS"

// codeShuttingDown is the error code of a request that comes while the
// endpoint closes (503, Retry-After).
const codeShuttingDown = "SHUTTING_DOWN"

// retryAfterSeconds is the Retry-After of those refusals.
const retryAfterSeconds = 30

// unavailable writes a 503 with Retry-After and the protocol's error body.
func unavailable(w http.ResponseWriter, code, message string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	jsonhttp.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// Endpoint is the MCP server side of the gateway: the SDK servers of /mcp
// and of each /mcp/sessions/{sid}, their handlers, and the goroutine that
// keeps their tool lists in step with the engine. New builds it, Mount
// adds its routes, Start starts the goroutine, Close stops it and ends the
// MCP sessions.
type Endpoint struct {
	keys     Auth        // the agent key
	views    Sessions    // the sessions, read
	remote   Tools       // the tools, listed and watched
	dispatch Calls       // the calls made
	outputs  OutputGuard // nil: results pass as they are
	log      *slog.Logger
	sdkLog   *slog.Logger // the SDK's lines: its warnings and errors only
	opts     Options
	origins  *originPolicy
	posts    *postContexts
	waiters  *callWaiters
	running  *localCalls // tools/call handlers of durable sessions running here
	// screen finds text aimed at a model in what outsiders wrote of their
	// tools (descriptions, schemas, client names) before hosts see it.
	screen *outputsafety.Sanitizer
	// tasks serves MCP tasks (tasks.go, taskrpc.go, taskext.go).
	tasks *taskServer

	gateway *route     // /mcp
	names   *nameTable // /mcp's names; only the sync goroutine uses it

	mu       sync.Mutex
	sessions map[string]*route // /mcp/sessions/{sid}, made on first use
	pending  int               // new stateful MCP sessions being set up
	listens  int               // subscriptions/listen streams open
	closed   bool
	calls    sync.WaitGroup // tools/call handlers running (enter, Close)

	changes *changeQueue
	// listed is closed once the first listing after Start is done (or
	// the endpoint closes): requests wait for it, so that a host
	// connecting as the gateway starts finds every tool listed.
	listed    chan struct{}
	listOnce  sync.Once
	life      context.Context
	end       context.CancelFunc
	stopWatch func()
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

// route is one MCP server with its tool list and its two handlers: the
// stateless one for the 2026-07-28 revision, the stateful one for earlier
// revisions (whose MCP session ids are valid on this route only).
type route struct {
	key       string // "" for /mcp, else the client session id
	server    *mcp.Server
	tools     *toolSet
	stateless *mcp.StreamableHTTPHandler
	stateful  *mcp.StreamableHTTPHandler
	maxBody   int64 // the SDK's limit on a request body
	// syncMu makes a route's list be brought up to date by one at a time,
	// each from what the engine says then.
	syncMu sync.Mutex
	// ids hands the SDK the id of the session it sets up next;
	// reviveMu makes one request at a time revive a session
	// (sessions_durable.go).
	ids      *sessionIDs
	reviveMu sync.Mutex
}

// New builds the endpoint; it starts nothing.
func New(opts Options) *Endpoint {
	opts = opts.withDefaults()
	life, end := context.WithCancel(context.Background())
	e := &Endpoint{
		keys:     opts.Auth,
		views:    opts.Sessions,
		remote:   opts.Tools,
		dispatch: opts.Calls,
		outputs:  opts.Guard,
		log:      opts.Log,
		sdkLog:   slog.New(atLeast{newUndeliveredLog(opts.Log.Handler(), undeliveredInterval, time.Now), slog.LevelWarn}),
		opts:     opts,
		origins:  newOriginPolicy(opts.AllowedOrigins),
		posts:    newPostContexts(life),
		waiters:  newCallWaiters(),
		running:  newLocalCalls(),
		screen:   outputsafety.New(),
		names:    newNameTable(),
		sessions: map[string]*route{},
		changes:  newChangeQueue(),
		listed:   make(chan struct{}),
		life:     life,
		end:      end,
		done:     make(chan struct{}),
	}
	e.tasks = &taskServer{ep: e, seal: rand.Text()}
	e.gateway = e.newRoute("", "toolgate: the tools of this gateway and of every client session connected to it. "+
		"A session's tool is named <tool>__<the last 12 hex digits of its session id>.")
	return e
}

func (e *Endpoint) newRoute(key, instructions string) *route {
	ids := newSessionIDs()
	server := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Version: e.opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       e.sdkLog,
		GetSessionID: ids.get,
		// Tools, and their list changes. No logging. Prompts and
		// resources: none, but declared, as the SDK answers their list
		// methods (with empty lists) all the same, and a server must
		// declare what it answers.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
		},
	})
	server.AddReceivingMiddleware(e.tasks.taskMiddleware) // tasks.go
	maxBody := e.opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	var events mcp.EventStore
	if e.opts.SessionStore != nil {
		events = eventStore{e}
	}
	// The SDK's DNS-rebinding check (loopback address, other Host) is off:
	// the gateway's own Host check (--allowed-hosts) has passed already,
	// and would be overruled for a name it allows behind a local proxy.
	return &route{
		key:     key,
		ids:     ids,
		server:  server,
		tools:   newToolSet(server, e.log),
		maxBody: maxBody,
		stateless: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true,
			DisableLocalhostProtection:   true,
			MaxRequestBodyBytes:          maxBody,
			Logger:                       e.sdkLog,
		}),
		stateful: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			SessionTimeout:             e.opts.SessionIdle,
			EventStore:                 events,
			DisableLocalhostProtection: true,
			MaxRequestBodyBytes:        maxBody,
			Logger:                     e.sdkLog,
		}),
	}
}

// Mount adds /mcp and /mcp/sessions/{sid} (every method) to r. Their
// requests wait for Start's first listing (or Close): call Start before
// serving.
func (e *Endpoint) Mount(r chi.Router) {
	r.Handle("/mcp", e.guard(http.HandlerFunc(e.serveGateway)))
	r.Handle("/mcp/sessions/{sid}", e.guard(http.HandlerFunc(e.serveSession)))
}

// Start watches the engine's tools and lists them: every open session's
// and the gateway's own, then each change. Requests that come before that
// first listing is done wait for it. Starting twice does nothing.
func (e *Endpoint) Start() {
	e.startOnce.Do(func() {
		e.stopWatch = e.remote.WatchTools(e.changes.add)
		e.changes.add("")
		for _, sid := range e.remote.SessionIDs() {
			e.changes.add(sid)
		}
		go e.syncLoop()
	})
}

// Close stops the watch and ends every MCP session (their streams end);
// requests that come later are refused with 503. It then waits for the
// tools/call handlers still running: the caller ends the HTTP requests
// first (their calls are cancelled with them), as the server does by
// cancelling its requests' base context. Safe without Start and more
// than once.
func (e *Endpoint) Close() {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		routes := []*route{e.gateway}
		for _, rt := range e.sessions {
			routes = append(routes, rt)
		}
		e.mu.Unlock()
		e.end()
		e.startOnce.Do(func() {}) // no Start after Close
		e.listingDone()           // nothing waits for a listing any more
		// Started: stop the watch, then the sync goroutine.
		if e.stopWatch != nil {
			e.stopWatch()
			<-e.done
		}
		for _, rt := range routes {
			rt.closeSessions()
		}
		// The handlers' requests have ended (the server cancels them
		// first), so their calls are being cancelled: wait for that, so
		// that no handler uses the engine after the gateway closes it.
		e.calls.Wait()
	})
}

// enter counts a tools/call handler in, unless the endpoint is closed.
func (e *Endpoint) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.calls.Add(1)
	return true
}

// closeSessions ends the route's MCP sessions.
func (rt *route) closeSessions() {
	for ss := range rt.server.Sessions() {
		_ = ss.Close()
	}
}

// serveGateway serves /mcp.
func (e *Endpoint) serveGateway(w http.ResponseWriter, r *http.Request) {
	e.serveRoute(e.gateway, w, r)
}

// serveSession serves /mcp/sessions/{sid}: 404 for a session that is not
// open.
func (e *Endpoint) serveSession(w http.ResponseWriter, r *http.Request) {
	sid := chi.URLParam(r, "sid")
	var rt *route
	if toolgate.WellFormedID(sid) { // else it names no session: not read
		rt = e.sessionRoute(r.Context(), sid)
	}
	if rt == nil {
		// A task made on this route outlives the session: its methods read
		// the stored call, and need no route.
		if toolgate.WellFormedID(sid) && r.Method == http.MethodPost && !e.isClosed() {
			if body, ok := strictBody(w, r, e.gateway.maxBody); !ok || e.tasks.serveTasks(w, r, body) {
				return
			}
		}
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "no open session %s", sid))
		return
	}
	e.serveRoute(rt, w, r)
}

// serveRoute hands a request to the route's handler for its revision,
// through the keep-alive writer.
func (e *Endpoint) serveRoute(rt *route, w http.ResponseWriter, r *http.Request) {
	// The first listing after Start (no more than a read of each open
	// session): a host that connects as the gateway starts would
	// otherwise find tools missing, and a call to one would be refused as
	// unknown.
	select {
	case <-e.listed:
	case <-r.Context().Done():
		return
	}
	if e.isClosed() {
		unavailable(w, codeShuttingDown, "the gateway is shutting down")
		return
	}
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = strictBody(w, r, rt.maxBody); !ok {
			return
		}
	}
	if e.tasks.serveTasks(w, r, body) { // MCP tasks (taskrpc.go)
		return
	}
	stateless := r.Header.Get(headerProtocolVersion) >= statelessRevision
	durable := !stateless && e.opts.SessionStore != nil
	// A reply the host does not take in time ends the request (the
	// streamWriter's write timeout): its handler returns, the host is cut.
	ctx, giveUp := context.WithCancel(r.Context())
	defer giveUp()
	r = r.WithContext(ctx)
	sw := newStreamWriter(w, e.opts.Heartbeat, e.opts.StreamWriteTimeout, giveUp)
	defer sw.finish()
	if r.Method == http.MethodPost {
		var untrack func()
		request := ""
		if durable {
			request, _ = requestOf(body)
		}
		r, untrack = e.posts.track(r, sw, durable, request)
		defer untrack()
	}
	if stateless {
		// A subscriptions/listen stream lives as long as the host wants:
		// they are bounded. (The SDK refuses a request whose Mcp-Method
		// is not its body's method, and batches.)
		if r.Method == http.MethodPost && r.Header.Get(headerMethod) == methodListen {
			if !e.admitListen() {
				unavailable(w, codeTooManySessions,
					"the gateway holds as many subscriptions/listen streams as it may; try again later")
				return
			}
			defer e.listenEnded()
		}
		rt.stateless.ServeHTTP(sw, r)
		return
	}
	if durable {
		e.serveDurable(rt, sw, r, body)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get(headerSessionID) == "" {
		// A new stateful MCP session, if the request initializes one.
		if !e.admitSession() {
			unavailable(w, codeTooManySessions,
				"the gateway holds as many MCP sessions as it may; try again later, or use protocol revision "+statelessRevision)
			return
		}
		defer e.admitted()
	}
	rt.stateful.ServeHTTP(sw, r)
}

// listingDone releases the requests waiting for the first listing.
func (e *Endpoint) listingDone() {
	e.listOnce.Do(func() { close(e.listed) })
}

func (e *Endpoint) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// admitSession reports whether a new stateful MCP session may be set up
// (counting those alive on every route and those being set up), and
// counts it as being set up; admitted ends that.
func (e *Endpoint) admitSession() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	alive := e.pending + e.gateway.liveSessions()
	for _, rt := range e.sessions {
		alive += rt.liveSessions()
	}
	if alive >= e.opts.MaxSessions {
		return false
	}
	e.pending++
	return true
}

func (e *Endpoint) admitted() {
	e.mu.Lock()
	e.pending--
	e.mu.Unlock()
}

// admitListen reports whether a subscriptions/listen stream may be
// opened (fewer than MaxListens are, over every route), and counts it;
// listenEnded ends that.
func (e *Endpoint) admitListen() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.listens >= e.opts.MaxListens {
		return false
	}
	e.listens++
	return true
}

func (e *Endpoint) listenEnded() {
	e.mu.Lock()
	e.listens--
	e.mu.Unlock()
}

// liveSessions counts the route's stateful MCP sessions (those with an
// id; a stateless request's session has none).
func (rt *route) liveSessions() int {
	n := 0
	for ss := range rt.server.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// atLeast passes on only the records of its level or above: the SDK logs
// every stateless request's session at info ("server connecting"), which
// would be a line per MCP request in the gateway's log.
type atLeast struct {
	slog.Handler
	min slog.Level
}

// Enabled implements slog.Handler.
func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(attrs), h.min}
}

// WithGroup implements slog.Handler.
func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}

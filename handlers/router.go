package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
	"github.com/toolgate/toolgate/outputsafety"
	"github.com/toolgate/toolgate/web"
)

// Router is the chi router the API is built on, for Options.Mount.
type Router = chi.Router

// API is the gateway's HTTP handler.
type API struct {
	opts    Options
	auth    Auth
	tokens  SessionAuth
	router  chi.Router
	streams *streamHub // serves event streams taken over from net/http
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.router.ServeHTTP(w, r) }

// Start starts the goroutines that write to the event streams the API
// takes over from net/http (a few workers and a ping ticker, however many
// streams are open). Call it before serving; until then, and after Close,
// such a stream ends as soon as its first events are written. Starting
// twice, or after Close, does nothing.
func (a *API) Start() { a.streams.start() }

// Close ends the event streams the API has taken over from net/http (the
// HTTP server's Shutdown does not see them) and stops their workers. It is
// safe without Start and more than once.
func (a *API) Close() { a.streams.close() }

// New builds the gateway's HTTP handler. It starts nothing: Start starts
// the stream workers, Close stops them.
func New(opts Options) *API {
	if opts.StreamRetry == 0 {
		opts.StreamRetry = 2 * time.Second
	}
	if opts.MaxCallWait == 0 {
		opts.MaxCallWait = 15 * time.Minute
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = defaultStreamWriteTimeout
	}
	if opts.MaxStreamSessions <= 0 {
		opts.MaxStreamSessions = defaultMaxStreamSessions
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = defaultBodyReadTimeout
	}
	a := &API{opts: opts, auth: opts.Auth, tokens: opts.SessionAuth}
	a.streams = newStreamHub(opts.StreamWriteTimeout)
	heartbeats := newHeartbeatRange(opts.MinHeartbeat, opts.Heartbeat)
	// Each resource holds only its part of the engine.
	sessions := &sessionHandlers{sessions: opts.Sessions}
	tools := &toolHandlers{tools: opts.Tools, screen: outputsafety.New()}
	stream := &streamHandler{delivery: opts.Delivery, hub: a.streams, retry: opts.StreamRetry, heartbeat: heartbeats,
		writeTimeout: opts.StreamWriteTimeout}
	poll := &pollHandler{delivery: opts.Delivery, wait: opts.PollWait, maxWait: opts.MaxPollWait}
	multi := &multiHandlers{tokens: opts.SessionAuth, delivery: opts.Delivery, hub: a.streams, streams: newStreamRegistry(),
		retry: opts.StreamRetry, heartbeat: heartbeats, writeTimeout: opts.StreamWriteTimeout, maxSessions: opts.MaxStreamSessions,
		wait: opts.PollWait, maxWait: opts.MaxPollWait}
	answers := &answerHandlers{answers: opts.Answers}
	probe := newProbeHandler(opts.StreamWriteTimeout)
	calls := &callHandlers{calls: opts.Calls, maxWait: opts.MaxCallWait}
	r := chi.NewRouter()
	a.router = r
	r.Use(middleware.Recoverer)
	// The security headers on every reply (browser.go); then the body is
	// read whole, within its size limit and its time (bodyread.go), before
	// anything can refuse the request: a refusal of an unread body would
	// leave net/http reading it after the handler, without the deadline.
	// Then the Host check (hostcheck.go).
	r.Use(browserHeaders)
	r.Use(a.limitBody)
	r.Use(a.readBodyWithin)
	r.Use(newProxiedShares(opts.ProxiedAddressShare, opts.SessionLimit.TrustedProxies).limitProxied)
	r.Use(newHostPolicy(opts.ListenAddr, opts.AllowedHosts).checkHost)
	if len(opts.AllowedOrigins) > 0 {
		r.Use(cors.Handler(cors.Options{
			AllowedOrigins: opts.AllowedOrigins,
			AllowedMethods: []string{"GET", "POST", "DELETE", "OPTIONS"},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Last-Event-ID", "Idempotency-Key", "Accept",
				// MCP's Streamable HTTP (/mcp, package mcpserve).
				"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name"},
			ExposedHeaders:   []string{"Retry-After", "Mcp-Session-Id"},
			AllowCredentials: false,
			MaxAge:           600,
		}))
	}
	r.Use(requireJSON)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "no route %s %s", r.Method, r.URL.Path))
	})

	r.Get("/healthz", a.handleHealth)
	r.Get("/openapi.json", handleOpenAPI)
	if opts.Metrics != nil {
		r.With(a.RequireAgent).Method("GET", "/metrics", opts.Metrics)
	}

	// Client API.
	r.With(a.requireClientKey, limitSessionCreation(opts.SessionLimit, a.auth)).Post("/v1/sessions", sessions.handleSessionCreate)
	// A {sid} that is not an id's shape is 404 once the credentials are
	// checked (pathids.go), without a read of the database.
	r.Route("/v1/sessions/{sid}", func(r chi.Router) {
		r.Group(func(r chi.Router) {
			r.Use(a.requireSessionOrAgent, sessionInPath)
			r.Get("/", sessions.handleSessionGet)
			r.Post("/close", sessions.handleSessionClose)
			r.Delete("/", sessions.handleSessionClose)
		})
		r.Group(func(r chi.Router) {
			r.Use(a.requireSession, sessionInPath)
			r.Post("/tools", tools.handleToolsRegister)
			r.Delete("/tools/{name}", tools.handleToolDelete)
			r.Post("/results", answers.handleResults)
			r.Post("/progress", answers.handleProgress)
			r.Get("/probe", probe.handleProbe)
		})
		// The two routes a browser's EventSource (which cannot set a
		// header) may reach with ?access_token=; no other route takes it.
		r.Group(func(r chi.Router) {
			r.Use(a.requireSessionQueryToken, sessionInPath)
			r.Get("/events", stream.handleEvents)
			r.Get("/poll", poll.handlePoll)
		})
	})

	// Several sessions on one stream or poll; each session's token is in
	// the body (a leave's in the header).
	r.Post("/v1/streams", multi.handleStreamOpen)
	r.Post("/v1/streams/{stream_id}/sessions", multi.handleJoin)
	r.Delete("/v1/streams/{stream_id}/sessions/{sid}", multi.handleLeave)
	r.Post("/v1/poll", multi.handlePoll)

	// Caller API.
	r.Group(func(r chi.Router) {
		r.Use(a.RequireAgent)
		r.Get("/api/tools", tools.handleToolsList)
		r.Get("/v1/sessions", sessions.handleSessionList)
		r.Post("/v1/calls", calls.handleCallCreate)
		r.Get("/v1/calls", calls.handleCallList)
		r.Get("/v1/calls/{id}", calls.handleCallGet) // checks its id after wait_ms
		r.With(callInPath).Post("/v1/calls/{id}/cancel", calls.handleCallCancel)
	})
	if opts.Mount != nil {
		opts.Mount(r, a)
	}

	r.Get("/*", a.handleAsset(web.Assets()))
	return a
}

// limitBody caps every request body at MaxBodyBytes; a declared length
// over it is refused before anything is read.
func (a *API) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.opts.MaxBodyBytes > 0 {
			if r.ContentLength > a.opts.MaxBodyBytes {
				jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EPayloadTooLarge, "the request body is larger than the limit of %d bytes", a.opts.MaxBodyBytes))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// handleHealth answers GET /healthz, which anyone may ask: 200 when the
// engine can serve, 503 when its database cannot be reached. The
// database's own error (which may name its host, user and database) goes
// to the log only.
func (a *API) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := a.auth.Healthy(r.Context()); err != nil {
		jsonhttp.RequestLogger(r).Warn("health check: the database cannot be reached", "err", err)
		jsonhttp.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "the database cannot be reached"})
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// RequireAgent lets through only requests bearing the agent key.
func (a *API) RequireAgent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := jsonhttp.Bearer(r, false)
		if secret == "" {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EUnauthenticated, "the agent key is required (Authorization: Bearer <agent key>)"))
			return
		}
		if !a.auth.IsAgentKey(secret) {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EUnauthenticated, "invalid agent key"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireSession lets through only requests bearing the token of the
// session named in the path, in the Authorization header.
func (a *API) requireSession(next http.Handler) http.Handler {
	return a.sessionAuth(next, false)
}

// requireSessionQueryToken is requireSession that also takes the token as
// ?access_token=, for GET /v1/sessions/{sid}/events and /poll only.
func (a *API) requireSessionQueryToken(next http.Handler) http.Handler {
	return a.sessionAuth(next, true)
}

func (a *API) sessionAuth(next http.Handler, allowQuery bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := chi.URLParam(r, "sid")
		if err := a.tokens.AuthorizeSession(r.Context(), sid, jsonhttp.Bearer(r, allowQuery)); err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireSessionOrAgent accepts the session's token or the agent key.
func (a *API) requireSessionOrAgent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := jsonhttp.Bearer(r, false)
		if a.auth.IsAgentKey(secret) {
			next.ServeHTTP(w, r)
			return
		}
		a.requireSession(next).ServeHTTP(w, r)
	})
}

// requireClientKey lets through only requests bearing a key that may
// create sessions: the client key when one is configured (the agent key
// also serves).
func (a *API) requireClientKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.auth.IsClientKey(jsonhttp.Bearer(r, false)) {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EUnauthenticated, "this gateway requires its client key to create sessions (Authorization: Bearer <client key>)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireSessionOrAgent is requireSessionOrAgent for routes added by Mount.
func (a *API) RequireSessionOrAgent(next http.Handler) http.Handler {
	return a.requireSessionOrAgent(next)
}

// detached returns a context that outlives the request, for reading what a
// request has just changed after its client went away.
func detached(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

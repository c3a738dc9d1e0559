// Package server is toolgate's process: it builds the engine (package
// engine) and the agent host (package agenthost) over the store, in that
// order (wire.go), and runs the HTTP server around them.
//
// # Lifecycle
//
// A process goes through four steps, each its own call:
//
//	srv, err := server.Open(ctx, cfg, log) // store, engine, agent loop; nothing bound
//	err = srv.Listen()                     // binds cfg.Addr; srv.URL() now answers
//	err = srv.Serve(ctx)                   // serves until ctx ends, then shuts HTTP down
//	err = srv.Close()                      // stops the engine and agent, closes the store
//
// Open opens the SQLite store, recovers the engine (whose deadline and
// sweep goroutines start with it), builds the agent loop and the HTTP
// handler, and resumes the runs and built-in calls a stopped process left
// open; it binds nothing (but a TLS certificate or key that cannot be
// loaded fails it). Listen binds the address (":0" picks a free port,
// which URL reports, https:// with a certificate); Serve calls it when it
// has not been called. Serve serves HTTPS with HTTP/2 when the Config
// names a certificate and key (TLSCert, TLSKey), plain HTTP/1.1 otherwise.
// Serve starts the stream workers, serves, and when its context ends (or
// Close is called) ends streams and held polls and lets requests in
// flight finish within ShutdownTimeout. Close stops serving if need be, then the
// engine's goroutines and the agent's runs, commits pending writes and
// closes the database; it is idempotent, and Open calls it itself when a
// step fails, so a caller never holds half an open server.
//
// The logger is passed to Open, which passes it on to the engine, the
// agent loop and the HTTP handler; a nil logger discards.
package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/clientaddr"
	"github.com/toolgate/toolgate/mcpimport"
)

// Config is everything the gateway process can be told. Zero fields take
// the defaults of DefaultConfig.
type Config struct {
	Addr           string   // listen address, e.g. "127.0.0.1:8080"
	DBPath         string   // SQLite file, or a postgres:// URL shared by several nodes
	AgentKey       string   // caller/admin secret; when empty, generated into the key file (agentkey.go)
	ClientKey      string   // when set, required to create sessions
	AllowedOrigins []string // CORS origins for browser clients on other origins

	// TLSCert and TLSKey, set together, are the PEM files of the
	// certificate (its chain, leaf first) and private key the gateway
	// serves HTTPS with; HTTP/2 is then negotiated with every client that
	// offers it, so a browser carries all its tabs' requests on one
	// connection. Both empty serves plain HTTP/1.1.
	TLSCert string
	TLSKey  string

	Heartbeat time.Duration // ping interval on streams, and the most a stream may ask (heartbeat_ms)
	// MinHeartbeat is the least ping interval a stream may ask with
	// heartbeat_ms (a client behind a proxy that cuts idle connections);
	// above Heartbeat, Heartbeat is the least too.
	MinHeartbeat time.Duration
	// MCPTaskMaxTTL bounds how long an MCP task is kept (its ttl), whatever
	// the host asks for; a host that asks for none gets it.
	MCPTaskMaxTTL   time.Duration
	PollWait        time.Duration // default hold of a long-poll
	MaxPollWait     time.Duration // cap on a client's wait_ms
	DefaultTimeout  time.Duration // per-call timeout when neither tool nor call sets one
	MinTimeout      time.Duration // smallest timeout a tool or call may ask for
	MaxTimeout      time.Duration // largest timeout, and the longest a call may live with progress
	SessionGrace    time.Duration // how long an offline session's tools stay callable
	SessionTTL      time.Duration // how long an unseen session lives
	MaxToolsPerSess int           // tools one session may hold
	MaxBodyBytes    int64         // request body limit
	SweepInterval   time.Duration // how often expiry and pruning run
	EventRetention  time.Duration // how long stream events are kept for replay
	ShutdownTimeout time.Duration // how long SIGTERM waits for requests to finish

	// MaxStreamSessions bounds the sessions of one multi-session stream or
	// poll (POST /v1/streams, POST /v1/poll).
	MaxStreamSessions int
	// MCPSessionIdle is how long an MCP host's session lives without a
	// request; MaxMCPSessionsPerKey bounds those alive of one key (zero:
	// package mcpserve's defaults).
	MCPSessionIdle       time.Duration
	MaxMCPSessionsPerKey int

	// Connections and slow clients. MaxStreamsPerSession
	// bounds the streams and held polls one session holds at once (its
	// places on multi-session streams and polls count too); a newer one
	// replaces the oldest. MaxConnections bounds the connections served at
	// once; more wait in the kernel's accept queue. 0 derives it from the
	// process's file-descriptor limit (see connectionLimit). BodyReadTimeout
	// is how long a client may take to send a request's headers, and then
	// its body; streams and held polls are not bounded by it once their
	// request is read.
	MaxStreamsPerSession int
	MaxConnections       int
	BodyReadTimeout      time.Duration
	// MaxConnectionsPerAddress is one client address's share of
	// MaxConnections (an IPv6 address's /64): its connections past it are
	// closed at once; behind a trusted proxy, which holds the connections
	// of many clients, it bounds the requests in flight per client
	// address instead (429). 0 derives it (connectionsPerAddress); a
	// negative value disables it.
	MaxConnectionsPerAddress int

	// ApprovalTimeout is how long a call may wait for approval before it
	// ends timed_out.
	ApprovalTimeout time.Duration

	// MaxMetadataBytes bounds a session's metadata, as compact JSON: more
	// is refused (413) when the session is created.
	MaxMetadataBytes int

	// The model the agent loop talks to, through any OpenAI-compatible
	// chat-completions endpoint. With no LLMModel the runs API answers
	// MODEL_NOT_CONFIGURED and everything else serves as usual.
	LLMBaseURL string // e.g. http://localhost:11434/v1 for Ollama
	LLMModel   string // e.g. llama3.1
	LLMAPIKey  string // empty for servers that need none

	// Abuse limits. Zero takes the default; a negative value disables the
	// limit (a rate or burst below zero disables its bucket).
	//
	// SessionRate and SessionBurst bound the sessions one client address
	// may create (POST /v1/sessions; the agent key's are not counted): a
	// token bucket of SessionBurst, refilled at SessionRate a second.
	SessionRate  float64
	SessionBurst int
	// TrustedProxies are the reverse proxies (CIDR prefixes or single
	// addresses) whose X-Forwarded-For names the client address; from
	// any other peer the header is ignored.
	TrustedProxies []string
	// MaxRunsPerSession bounds the runs a session's token may have in
	// progress at once; RunRate and RunBurst the pace it may start them
	// (a bucket per session). Runs started with the agent key are not
	// limited.
	MaxRunsPerSession int
	RunRate           float64
	RunBurst          int
	// AddressRunRate and AddressRunBurst bound the runs one client
	// address may start with session tokens, whatever the session (a
	// bucket per address): sessions are cheap, so the per-session bounds
	// alone multiply by the sessions an address may create.
	AddressRunRate  float64
	AddressRunBurst int
	// MaxSessionRuns bounds the runs started with session tokens that
	// are in progress at once in the whole gateway (each one a series of
	// requests to the operator's paid model); the agent key's runs are
	// not counted.
	MaxSessionRuns int
	// MaxRunsPerAddress bounds the runs started with session tokens that
	// one client address has in progress at once, whatever the sessions:
	// its share of MaxSessionRuns. 0 derives it (a quarter of
	// MaxSessionRuns, at least 1).
	MaxRunsPerAddress int
	// MaxRunInputBytes bounds what one run sends its model in all (the
	// sum of its requests' bodies, every step resending the conversation
	// so far): a run whose next request would pass it fails with
	// RUN_INPUT_LIMIT, and a run request whose first request alone
	// would is refused 413. Runs of the agent key are held to it too.
	// Negative: no bound.
	MaxRunInputBytes int64
	// MaxOpenCallsPerSession bounds the calls not yet final whose target
	// is one session; the next call to its tools is refused.
	MaxOpenCallsPerSession int

	// ToolNamePattern, when set, is a regular expression every registered
	// tool name must also match (the gateway's name policy).
	ToolNamePattern string

	// AllowedHosts are the names, besides IP addresses, localhost and the
	// listen address's host, that requests may give as their Host
	// ("*.example.com" for subdomains, "*" for any); others are refused
	// with 421, against DNS rebinding. A gateway behind a proxy that
	// passes the public name on, or on all interfaces and reached by name,
	// lists that name here.
	AllowedHosts []string

	// Imported MCP servers. MCPServers are the MCP servers whose
	// tools the gateway imports (--mcp-server NAME=TARGET, see package
	// mcpimport): listed by GET /api/tools as NAME__tool with source
	// {"kind": "mcp", "server": NAME}, called without a session, used by
	// the agent loop. Names must be valid (mcpimport.NamePattern) and
	// distinct.
	MCPServers []mcpimport.Config
	// MCPServerEnv names, per imported server started as a command, the
	// variables of the gateway's environment it gets besides
	// mcpimport.BaseEnv (--mcp-server-env NAME=VAR1,VAR2); each must name
	// a server of MCPServers, once.
	MCPServerEnv []mcpimport.EnvGrant
	// MCPOptions tune the imported servers' connections (backoff, how
	// often their tools are listed again, limits); zero fields take
	// mcpimport's defaults, and Log is the gateway's.
	MCPOptions mcpimport.Options

	// The rest of the tool system. SandboxDir, when set, is a
	// directory of WebAssembly (WASI preview 1) tools: every NAME.wasm
	// with a NAME.json beside it is a tool run inside the gateway, listed
	// with source {"kind": "sandbox"}. HTTPAllow are the hosts the
	// http_request built-in may reach although their addresses are
	// loopback, private, link-local or metadata ones, which it refuses
	// otherwise.
	SandboxDir string
	HTTPAllow  []string
	// DisabledBuiltins names built-in tools the gateway leaves out
	// (--disable-builtins): not listed, not offered to the model, and a
	// call of one is TOOL_NOT_FOUND. A name that is no built-in tool
	// stops Open.
	DisabledBuiltins []string
	// HTTPRequestRuns says which runs may use http_request: "agent" (the
	// default: the agent key's runs and direct calls) or "all" (runs a
	// session's token started too).
	HTTPRequestRuns string
	// SandboxCacheDir keeps the sandboxed tools' compiled code across
	// restarts (wazero's compilation cache); empty is toolgate/wazero in
	// the user's cache directory (os.UserCacheDir), or memory only when
	// there is none. SandboxPoll is how often SandboxDir is looked at for
	// added, changed and removed modules (zero: every second).
	SandboxCacheDir string
	SandboxPoll     time.Duration

	// LogLevel is the least level the command logs: debug, info, warn
	// or error. Open does not read it (it is given its logger).
	LogLevel string

	// Now, when set, replaces the wall clock for grace, time-to-live and
	// pruning decisions (tests use it to move time without sleeping).
	Now func() time.Time
}

// DefaultConfig returns the defaults, as the option table (Options)
// declares them.
func DefaultConfig() Config {
	return Options().Defaults()
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.DBPath == "" {
		c.DBPath = d.DBPath
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setDur(&c.Heartbeat, d.Heartbeat)
	setDur(&c.MinHeartbeat, min(d.MinHeartbeat, c.Heartbeat))
	setDur(&c.PollWait, d.PollWait)
	setDur(&c.MaxPollWait, d.MaxPollWait)
	setDur(&c.DefaultTimeout, d.DefaultTimeout)
	setDur(&c.MinTimeout, d.MinTimeout)
	setDur(&c.MaxTimeout, d.MaxTimeout)
	setDur(&c.SessionGrace, d.SessionGrace)
	setDur(&c.SessionTTL, d.SessionTTL)
	setDur(&c.SweepInterval, d.SweepInterval)
	setDur(&c.EventRetention, d.EventRetention)
	setDur(&c.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&c.ApprovalTimeout, d.ApprovalTimeout)
	if c.MaxToolsPerSess == 0 {
		c.MaxToolsPerSess = d.MaxToolsPerSess
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxStreamSessions == 0 {
		c.MaxStreamSessions = d.MaxStreamSessions
	}
	if c.MaxMetadataBytes == 0 {
		c.MaxMetadataBytes = d.MaxMetadataBytes
	}
	c = c.withAbuseLimitDefaults(d)
	if c.MaxStreamsPerSession == 0 {
		c.MaxStreamsPerSession = d.MaxStreamsPerSession
	}
	setDur(&c.BodyReadTimeout, d.BodyReadTimeout)
	setDur(&c.MCPTaskMaxTTL, d.MCPTaskMaxTTL)
	setDur(&c.MCPSessionIdle, d.MCPSessionIdle)
	if c.MaxMCPSessionsPerKey == 0 {
		c.MaxMCPSessionsPerKey = d.MaxMCPSessionsPerKey
	}
	return c
}

// withAbuseLimitDefaults fills the abuse limits left at zero from d.
func (c Config) withAbuseLimitDefaults(d Config) Config {
	if c.SessionRate == 0 {
		c.SessionRate = d.SessionRate
	}
	if c.SessionBurst == 0 {
		c.SessionBurst = d.SessionBurst
	}
	if c.MaxRunsPerSession == 0 {
		c.MaxRunsPerSession = d.MaxRunsPerSession
	}
	if c.RunRate == 0 {
		c.RunRate = d.RunRate
	}
	if c.RunBurst == 0 {
		c.RunBurst = d.RunBurst
	}
	if c.MaxOpenCallsPerSession == 0 {
		c.MaxOpenCallsPerSession = d.MaxOpenCallsPerSession
	}
	if c.AddressRunRate == 0 {
		c.AddressRunRate = d.AddressRunRate
	}
	if c.AddressRunBurst == 0 {
		c.AddressRunBurst = d.AddressRunBurst
	}
	if c.MaxSessionRuns == 0 {
		c.MaxSessionRuns = d.MaxSessionRuns
	}
	if c.MaxRunInputBytes == 0 {
		c.MaxRunInputBytes = d.MaxRunInputBytes
	}
	return c
}

// mcpServers are MCPServers with the variables MCPServerEnv names for
// each; Validate has checked them.
func (c Config) mcpServers() []mcpimport.Config {
	servers, err := mcpimport.WithEnv(c.MCPServers, c.MCPServerEnv)
	if err != nil {
		return c.MCPServers // not reached after Validate
	}
	return servers
}

// runsPerAddress is MaxRunsPerAddress, or when that is 0 a quarter of
// MaxSessionRuns (at least 1; none when that is unbounded). 0 or less: no
// bound.
func (c Config) runsPerAddress() int {
	switch {
	case c.MaxRunsPerAddress != 0:
		return c.MaxRunsPerAddress
	case c.MaxSessionRuns > 0:
		return max(1, c.MaxSessionRuns/4)
	}
	return 0
}

// connectionsPerAddress is MaxConnectionsPerAddress, or when that is 0 a
// quarter of the connection limit (at least 4, but never more than half
// the limit, and at least 1): a browser opens up to six connections to a
// host over HTTP/1.1, yet a share must leave others room, so that two
// addresses cannot fill a small --max-connections. 0 or less: no bound.
func (c Config) connectionsPerAddress(limit int) int {
	if c.MaxConnectionsPerAddress != 0 {
		return c.MaxConnectionsPerAddress
	}
	return max(1, limit/4, min(limit/2, 4))
}

// sessionLimit is the handlers' limit of sessions per client address.
// The trusted proxies were checked by Validate.
func (c Config) sessionLimit() handlers.SessionLimit {
	trusted, _ := clientaddr.ParseTrustedProxies(c.TrustedProxies)
	return handlers.SessionLimit{PerSecond: c.SessionRate, Burst: c.SessionBurst, TrustedProxies: trusted}
}

// runStartLimit is the handlers' limit of the runs one client address
// may start with session tokens. The trusted proxies were checked by
// Validate.
func (c Config) runStartLimit() handlers.AddressLimit {
	trusted, _ := clientaddr.ParseTrustedProxies(c.TrustedProxies)
	return handlers.AddressLimit{PerSecond: c.AddressRunRate, Burst: c.AddressRunBurst, TrustedProxies: trusted}
}

// Validate reports every setting that cannot work, all at once: each
// value outside its option's range (Options), then the settings that
// cannot work together. Zero fields are read as their defaults.
func (c Config) Validate() error {
	return c.ValidateFrom(nil)
}

// ValidateFrom is Validate, naming where each out-of-range value was
// given: from maps option names to a flag, a variable or a config file's
// line (options.Loaded.From).
func (c Config) ValidateFrom(from map[string]string) error {
	c = c.withDefaults()
	errs := Options().Check(&c, from)
	if IsPostgresURL(c.DBPath) && c.AgentKey == "" {
		errs = append(errs, errors.New("a PostgreSQL database is shared by several nodes, which must all accept the same agent key: set --agent-key (TOOLGATE_AGENT_KEY) to the same value on every node"))
	}
	if c.MinTimeout > c.MaxTimeout {
		errs = append(errs, fmt.Errorf("--min-timeout %s is above --max-timeout %s", c.MinTimeout, c.MaxTimeout))
	}
	if c.DefaultTimeout < c.MinTimeout || c.DefaultTimeout > c.MaxTimeout {
		errs = append(errs, fmt.Errorf("--default-timeout %s is outside [--min-timeout %s, --max-timeout %s]", c.DefaultTimeout, c.MinTimeout, c.MaxTimeout))
	}
	if c.PollWait > c.MaxPollWait {
		errs = append(errs, fmt.Errorf("--poll-wait %s is above --max-poll-wait %s", c.PollWait, c.MaxPollWait))
	}
	if c.LLMBaseURL != "" && !strings.HasPrefix(c.LLMBaseURL, "http://") && !strings.HasPrefix(c.LLMBaseURL, "https://") {
		errs = append(errs, fmt.Errorf("--llm-base-url %q must start with http:// or https://", c.LLMBaseURL))
	}
	if c.SandboxDir != "" {
		if info, err := os.Stat(c.SandboxDir); err != nil {
			errs = append(errs, fmt.Errorf("sandbox dir (--sandbox-dir, TOOLGATE_SANDBOX_DIR): %w", err))
		} else if !info.IsDir() {
			errs = append(errs, fmt.Errorf("sandbox dir %s (--sandbox-dir, TOOLGATE_SANDBOX_DIR) is not a directory", c.SandboxDir))
		}
	}
	if _, err := clientaddr.ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("--trusted-proxies: %v (give CIDR prefixes such as 10.0.0.0/8, or addresses)", err))
	}
	for _, h := range c.AllowedHosts {
		if strings.ContainsAny(h, "/ ") || h == "" {
			errs = append(errs, fmt.Errorf("--allowed-hosts: %q must be a host name such as gw.example.com, *.example.com or *, without scheme or path", h))
		}
	}
	if c.MaxConnectionsPerAddress > 0 && c.MaxConnections > 0 && c.MaxConnectionsPerAddress > c.MaxConnections {
		errs = append(errs, fmt.Errorf("--max-connections-per-address %d is above --max-connections %d", c.MaxConnectionsPerAddress, c.MaxConnections))
	}
	switch {
	case c.TLSCert != "" && c.TLSKey == "":
		errs = append(errs, fmt.Errorf("--tls-cert: tls cert %q is set without a tls key (--tls-key): set both to serve HTTPS, or neither", c.TLSCert))
	case c.TLSKey != "" && c.TLSCert == "":
		errs = append(errs, fmt.Errorf("--tls-key: tls key %q is set without a tls cert (--tls-cert): set both to serve HTTPS, or neither", c.TLSKey))
	}
	// Imported MCP servers.
	if err := mcpimport.ValidateAll(c.MCPServers); err != nil {
		errs = append(errs, err)
	} else if _, err := mcpimport.WithEnv(c.MCPServers, c.MCPServerEnv); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tlsConfig loads the certificate and key of a gateway that serves HTTPS
// (nil, nil for plain HTTP), so that an unreadable file or a key that does
// not belong to the certificate stops the start before anything is opened
// or bound. HTTP/2 is not named here: net/http offers it (ALPN "h2") on
// every TLS listener it serves, next to HTTP/1.1.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("tls cert %q and key %q: %w", c.TLSCert, c.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// IsPostgresURL reports whether a --db value names a PostgreSQL database
// (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

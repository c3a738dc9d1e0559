package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/mcpimport"
	"github.com/toolgate/toolgate/server"
)

func init() {
	commands["serve"] = command{summary: "run the gateway", run: runServe}
}

// envFlags registers flags whose defaults come from environment variables,
// remembering the first bad value so it can be reported after parsing.
type envFlags struct {
	fs  *flag.FlagSet
	err error
}

func (f *envFlags) str(p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	f.fs.StringVar(p, name, def, usage+" (env "+env+")")
}

func (f *envFlags) duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil && f.err == nil {
			f.err = fmt.Errorf("%s=%q: %v", env, v, err)
		}
		if err == nil {
			def = d
		}
	}
	f.fs.DurationVar(p, name, def, usage+" (env "+env+")")
}

func (f *envFlags) integer(p *int64, name, env string, def int64, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && f.err == nil {
			f.err = fmt.Errorf("%s=%q: not a whole number", env, v)
		}
		if err == nil {
			def = n
		}
	}
	f.fs.Int64Var(p, name, def, usage+" (env "+env+")")
}

// mcpServerList is the value of the repeatable --mcp-server NAME=TARGET.
// Its environment variable holds one entry a line (blank lines skipped);
// the first --mcp-server replaces that list, as a flag wins over its
// variable.
type mcpServerList struct {
	list      []mcpimport.Config
	fromFlags bool
}

// String implements flag.Value.
func (l *mcpServerList) String() string {
	if l == nil {
		return ""
	}
	var names []string
	for _, c := range l.list {
		names = append(names, c.Name+"="+c.Target)
	}
	return strings.Join(names, "\n")
}

// Set implements flag.Value: one NAME=TARGET, checked.
func (l *mcpServerList) Set(entry string) error {
	c, err := mcpimport.ParseConfig(entry)
	if err != nil {
		return err
	}
	if !l.fromFlags {
		l.list, l.fromFlags = nil, true
	}
	l.list = append(l.list, c)
	return nil
}

// mcpServers registers the repeatable flag of the imported MCP servers,
// its default read from env, one entry a line.
func (f *envFlags) mcpServers(name, env string) *mcpServerList {
	l := &mcpServerList{}
	if v, ok := os.LookupEnv(env); ok {
		for i, line := range strings.Split(v, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			c, err := mcpimport.ParseConfig(line)
			if err != nil && f.err == nil {
				f.err = fmt.Errorf("%s line %d: %v", env, i+1, err)
			}
			l.list = append(l.list, c)
		}
	}
	f.fs.Var(l, name, "import the tools of an MCP server as `NAME=TARGET`, named NAME__tool; TARGET is an http(s):// URL (Streamable HTTP) or a command line run with /bin/sh and spoken to over stdio; repeatable; in the variable, one entry a line (env "+env+")")
	return l
}

// serveFlags parses the serve command's flags into a server.Config.
func serveFlags(args []string) (server.Config, slog.Level, error) {
	cfg := server.DefaultConfig()
	f := &envFlags{fs: flag.NewFlagSet("toolgate serve", flag.ContinueOnError)}
	var origins, logLevel string
	var maxBody, maxTools, maxStreamSessions int64
	f.str(&cfg.Addr, "addr", "TOOLGATE_ADDR", cfg.Addr, "listen address")
	f.str(&cfg.DBPath, "db", "TOOLGATE_DB", cfg.DBPath, "SQLite file, or a postgres:// URL for several nodes")
	f.str(&cfg.AgentKey, "agent-key", "TOOLGATE_AGENT_KEY", "", "caller/admin secret (also opens /metrics); when unset, generated at first start and written to <db>.agent-key (0600), the database keeping only its hash")
	f.str(&cfg.ClientKey, "client-key", "TOOLGATE_CLIENT_KEY", "", "when set, required to create sessions")
	f.str(&origins, "allowed-origins", "TOOLGATE_ALLOWED_ORIGINS", "", "comma-separated origins allowed by CORS, e.g. https://app.example.com; * for any")
	f.str(&cfg.TLSCert, "tls-cert", "TOOLGATE_TLS_CERT", "", "PEM certificate file (chain, leaf first); with --tls-key, serves HTTPS and HTTP/2")
	f.str(&cfg.TLSKey, "tls-key", "TOOLGATE_TLS_KEY", "", "PEM private key file of --tls-cert")
	f.str(&cfg.ToolNamePattern, "tool-name-pattern", "TOOLGATE_TOOL_NAME_PATTERN", "", "regular expression every registered tool name must also match")
	f.str(&cfg.LLMBaseURL, "llm-base-url", "TOOLGATE_LLM_BASE_URL", "", "OpenAI-compatible chat-completions endpoint for runs, e.g. http://localhost:11434/v1 (Ollama); OpenAI's when unset")
	f.str(&cfg.LLMModel, "llm-model", "TOOLGATE_LLM_MODEL", "", "model for runs, e.g. llama3.1; without it the runs API answers MODEL_NOT_CONFIGURED")
	f.str(&cfg.LLMAPIKey, "llm-api-key", "TOOLGATE_LLM_API_KEY", "", "API key of the model endpoint, when it needs one")
	f.str(&logLevel, "log-level", "TOOLGATE_LOG_LEVEL", "info", "debug, info, warn or error (debug logs every call state change)")
	f.duration(&cfg.Heartbeat, "heartbeat", "TOOLGATE_HEARTBEAT", cfg.Heartbeat, "ping interval on event streams, and the most a stream may ask (heartbeat_ms)")
	f.duration(&cfg.MinHeartbeat, "min-heartbeat", "TOOLGATE_MIN_HEARTBEAT", cfg.MinHeartbeat, "the least ping interval a stream may ask (heartbeat_ms)")
	f.duration(&cfg.PollWait, "poll-wait", "TOOLGATE_POLL_WAIT", cfg.PollWait, "how long a long-poll is held by default")
	f.duration(&cfg.MaxPollWait, "max-poll-wait", "TOOLGATE_MAX_POLL_WAIT", cfg.MaxPollWait, "cap on a poll's wait_ms")
	f.duration(&cfg.DefaultTimeout, "default-timeout", "TOOLGATE_DEFAULT_TIMEOUT", cfg.DefaultTimeout, "call timeout when neither tool nor call sets one")
	f.duration(&cfg.MinTimeout, "min-timeout", "TOOLGATE_MIN_TIMEOUT", cfg.MinTimeout, "smallest timeout a tool or call may ask for")
	f.duration(&cfg.MaxTimeout, "max-timeout", "TOOLGATE_MAX_TIMEOUT", cfg.MaxTimeout, "largest call timeout, and the longest a call may live with progress reports")
	f.duration(&cfg.SessionGrace, "session-grace", "TOOLGATE_SESSION_GRACE", cfg.SessionGrace, "how long an offline session's tools stay callable")
	f.duration(&cfg.SessionTTL, "session-ttl", "TOOLGATE_SESSION_TTL", cfg.SessionTTL, "how long an unseen session lives before it expires")
	f.duration(&cfg.SweepInterval, "sweep-interval", "TOOLGATE_SWEEP_INTERVAL", cfg.SweepInterval, "how often session expiry and event pruning run")
	f.duration(&cfg.EventRetention, "event-retention", "TOOLGATE_EVENT_RETENTION", cfg.EventRetention, "how long stream events are kept for replay")
	f.duration(&cfg.ApprovalTimeout, "approval-timeout", "TOOLGATE_APPROVAL_TIMEOUT", cfg.ApprovalTimeout, "how long a call may await approval before it ends timed_out")
	f.duration(&cfg.ShutdownTimeout, "shutdown-timeout", "TOOLGATE_SHUTDOWN_TIMEOUT", cfg.ShutdownTimeout, "how long SIGTERM waits for requests in flight")
	f.integer(&maxBody, "max-body", "TOOLGATE_MAX_BODY", cfg.MaxBodyBytes, "request body limit in bytes")
	f.integer(&maxTools, "max-tools", "TOOLGATE_MAX_TOOLS", int64(cfg.MaxToolsPerSess), "tools one session may hold")
	f.integer(&maxStreamSessions, "max-stream-sessions", "TOOLGATE_MAX_STREAM_SESSIONS", int64(cfg.MaxStreamSessions), "sessions one multi-session stream or poll may carry")
	// Session metadata.
	var maxMetadata int64
	f.integer(&maxMetadata, "max-metadata-bytes", "TOOLGATE_MAX_METADATA_BYTES", int64(cfg.MaxMetadataBytes), "largest session metadata, in bytes of compact JSON (413 past it)")
	abuseLimits := addAbuseLimitFlags(f, cfg) // serve_limits.go
	// Browser-facing defaults and secrets at rest.
	var allowedHosts string
	f.str(&allowedHosts, "allowed-hosts", "TOOLGATE_ALLOWED_HOSTS", "", "comma-separated host names requests may address besides IP addresses and localhost, e.g. gw.example.com,*.example.com; * for any (DNS rebinding guard)")
	// Connections and slow clients.
	var maxStreamsPerSession, maxConnections, maxConnectionsPerAddress int64
	f.integer(&maxStreamsPerSession, "max-streams-per-session", "TOOLGATE_MAX_STREAMS_PER_SESSION", int64(cfg.MaxStreamsPerSession), "streams and held polls one session may hold at once; a newer one replaces the oldest")
	f.integer(&maxConnections, "max-connections", "TOOLGATE_MAX_CONNECTIONS", int64(cfg.MaxConnections), "connections served at once, more wait to be accepted; 0 derives it from the file-descriptor limit")
	f.integer(&maxConnectionsPerAddress, "max-connections-per-address", "TOOLGATE_MAX_CONNECTIONS_PER_ADDRESS", int64(cfg.MaxConnectionsPerAddress),
		"connections one client address (IPv6: /64) may hold at once, more are closed (behind --trusted-proxies: its requests in flight, more are 429); 0 derives it (a quarter of --max-connections, at least 4, at most half), -1 disables the limit")
	f.duration(&cfg.BodyReadTimeout, "body-read-timeout", "TOOLGATE_BODY_READ_TIMEOUT", cfg.BodyReadTimeout, "how long a client may take to send a request's headers, and then its body")
	// Imported MCP servers.
	mcpServers := f.mcpServers("mcp-server", "TOOLGATE_MCP_SERVERS")
	// Sandboxed tools and built-ins.
	var httpAllow, disabledBuiltins string
	f.str(&cfg.HTTPRequestRuns, "http-request-runs", "TOOLGATE_HTTP_REQUEST_RUNS", "agent", "which runs may use http_request: agent (the agent key's runs and calls) or all (runs a session's token started too)")
	f.str(&disabledBuiltins, "disable-builtins", "TOOLGATE_DISABLE_BUILTINS", "", "comma-separated built-in tools to leave out, e.g. http_request,memory_write")
	f.str(&cfg.SandboxDir, "sandbox-dir", "TOOLGATE_SANDBOX_DIR", "", "directory of sandboxed WebAssembly tools: NAME.wasm (WASI preview 1) with NAME.json beside it")
	f.str(&cfg.SandboxCacheDir, "sandbox-cache-dir", "TOOLGATE_SANDBOX_CACHE_DIR", "", "directory keeping the sandboxed tools' compiled code across restarts (default: toolgate/wazero in the user's cache directory)")
	f.str(&httpAllow, "http-allow", "TOOLGATE_HTTP_ALLOW", "", "comma-separated hosts the http_request tool may reach although they resolve to loopback, private, link-local or metadata addresses")
	if err := f.fs.Parse(args); err != nil {
		return cfg, 0, err
	}
	if f.err != nil {
		return cfg, 0, f.err
	}
	if f.fs.NArg() > 0 {
		return cfg, 0, fmt.Errorf("unexpected arguments: %v", f.fs.Args())
	}
	cfg.MaxBodyBytes = maxBody
	cfg.MaxToolsPerSess = int(maxTools)
	cfg.MaxStreamSessions = int(maxStreamSessions)
	cfg.MaxMetadataBytes = int(maxMetadata)
	abuseLimits.apply(&cfg)
	cfg.MaxStreamsPerSession, cfg.MaxConnections = int(maxStreamsPerSession), int(maxConnections)
	cfg.MaxConnectionsPerAddress = int(max(maxConnectionsPerAddress, -1))
	cfg.MCPServers = mcpServers.list
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.AllowedOrigins = append(cfg.AllowedOrigins, o)
		}
	}
	for _, name := range strings.Split(disabledBuiltins, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.DisabledBuiltins = append(cfg.DisabledBuiltins, name)
		}
	}
	for _, h := range strings.Split(httpAllow, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.HTTPAllow = append(cfg.HTTPAllow, h)
		}
	}
	for _, h := range strings.Split(allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return cfg, 0, fmt.Errorf("--log-level: %v", err)
	}
	return cfg, level, cfg.Validate()
}

func runServe(ctx context.Context, args []string) error {
	cfg, level, err := serveFlags(args)
	if err == flag.ErrHelp {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv, err := server.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return errors.Join(err, srv.Close())
	}
	warnIfNamesRefused(log, cfg)
	url := srv.URL()
	printAgentKey(url, cfg, srv.Engine)
	err = srv.Serve(ctx)
	return errors.Join(err, srv.Close())
}

// warnIfNamesRefused warns when the gateway listens on all interfaces with
// no --allowed-hosts: it then answers requests by address and localhost
// only, and refuses (421) those that name it, as a proxy passing its
// public name on does.
func warnIfNamesRefused(log *slog.Logger, cfg server.Config) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil || len(cfg.AllowedHosts) > 0 {
		return
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		log.Warn("listening on all interfaces with no --allowed-hosts: requests addressed by a host name (not an IP address or localhost) are refused with 421, against DNS rebinding; list the names this gateway is reached by in --allowed-hosts (TOOLGATE_ALLOWED_HOSTS)")
	}
}

// printAgentKey prints the serving line, then the agent key (and where a
// generated one is kept) and the console link holding it, only when the
// gateway generated the key: one the operator gave (--agent-key,
// TOOLGATE_AGENT_KEY) they know already, and printed it would end up in
// whatever collects the process's output (journald, container logs).
func printAgentKey(url string, cfg server.Config, eng *server.Engine) {
	fmt.Printf("toolgate serving on %s\n", url)
	key, file := eng.AgentKey(), eng.AgentKeyFile()
	switch {
	case cfg.AgentKey != "":
		fmt.Printf("agent key: the one given (--agent-key or TOOLGATE_AGENT_KEY), not printed\n")
		fmt.Printf("console: %s/#agent_key=<agent key>\n", url)
		return
	case file != "":
		fmt.Printf("agent key: %s (kept in %s)\n", key, file)
	default:
		fmt.Printf("agent key: %s\n", key)
	}
	fmt.Printf("console: %s/#agent_key=%s\n", url, key)
}

package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/options"
	"github.com/toolgate/toolgate/mcpimport"
)

// Options is the table of the gateway's settings: every flag of
// toolgate serve, its environment variable, its key in the --config
// file, its default (DefaultConfig is read from it), its range (checked
// by Validate) and its help, from which docs/CONFIGURATION.md is
// written. A setting is added here and nowhere else.
func Options() options.Table[Config] {
	const (
		listen   = "Listening and access"
		streams  = "Streams and polls"
		calls    = "Calls and tools"
		sessions = "Sessions"
		conns    = "Connections and requests"
		runs     = "Runs (the agent loop)"
		tools    = "Imported, sandboxed and built-in tools"
	)
	dur := func(name, def, min, max, help string, field func(c *Config) any) options.Option[Config] {
		return options.Option[Config]{Name: name, Default: def, Unit: "duration", Min: min, Max: max, Legacy: options.LegacyZeroDefault, Help: help, Field: field}
	}
	// limit is a bound that can be switched off; 0 or less said off before.
	limit := func(name, def, unit, help string, field func(c *Config) any) options.Option[Config] {
		return options.Option[Config]{Name: name, Default: def, Unit: unit, Min: "1", Max: "1000000", Off: true, Legacy: options.LegacyNotPositiveOff, Help: help, Field: field}
	}
	rate := func(name, def, help string, field func(c *Config) any) options.Option[Config] {
		return options.Option[Config]{Name: name, Default: def, Unit: "per second", Max: "1000000", Off: true, Legacy: options.LegacyNotPositiveOff, Help: help, Field: field}
	}
	t := []struct {
		group string
		opts  []options.Option[Config]
	}{
		{listen, []options.Option[Config]{
			{Name: "addr", Default: "127.0.0.1:8080", Help: "listen address; :0 picks a free port", Field: func(c *Config) any { return &c.Addr }},
			{Name: "db", Default: "./toolgate.db", Help: "SQLite file, or a postgres:// URL of a database shared by several nodes", Field: func(c *Config) any { return &c.DBPath }},
			{Name: "agent-key", Help: "caller/admin secret (also opens /metrics); when unset, generated at first start and written to <db>.agent-key (0600), the database keeping only its hash", Field: func(c *Config) any { return &c.AgentKey }},
			{Name: "client-key", Help: "when set, required to create sessions", Field: func(c *Config) any { return &c.ClientKey }},
			{Name: "allowed-origins", Help: "origins allowed by CORS, e.g. https://app.example.com; * for any", Field: func(c *Config) any { return &c.AllowedOrigins }},
			{Name: "allowed-hosts", Help: "host names requests may address besides IP addresses and localhost, e.g. gw.example.com,*.example.com; * for any (DNS rebinding guard)", Field: func(c *Config) any { return &c.AllowedHosts }},
			{Name: "trusted-proxies", Help: "reverse proxies (CIDR prefixes or addresses) whose X-Forwarded-For names the client address; from any other peer it is ignored", Field: func(c *Config) any { return &c.TrustedProxies }},
			{Name: "tls-cert", Help: "PEM certificate file (chain, leaf first); with --tls-key, serves HTTPS and HTTP/2", Field: func(c *Config) any { return &c.TLSCert }},
			{Name: "tls-key", Help: "PEM private key file of --tls-cert", Field: func(c *Config) any { return &c.TLSKey }},
			{Name: "log-level", Default: "info", Values: []string{"debug", "info", "warn", "error"}, Help: "least level logged (debug logs every call state change)", Field: func(c *Config) any { return &c.LogLevel }},
			dur("shutdown-timeout", "10s", "1ms", "1h", "how long SIGTERM waits for requests in flight", func(c *Config) any { return &c.ShutdownTimeout }),
		}},
		{streams, []options.Option[Config]{
			dur("heartbeat", "15s", "1ms", "1h", "ping interval on event streams, and the most a stream may ask (heartbeat_ms)", func(c *Config) any { return &c.Heartbeat }),
			dur("min-heartbeat", "1s", "1ms", "1h", "the least ping interval a stream may ask (heartbeat_ms)", func(c *Config) any { return &c.MinHeartbeat }),
			dur("poll-wait", "25s", "1ms", "1h", "how long a long-poll is held by default", func(c *Config) any { return &c.PollWait }),
			dur("max-poll-wait", "1m", "1ms", "1h", "cap on a poll's wait_ms", func(c *Config) any { return &c.MaxPollWait }),
			{Name: "max-sessions-per-stream", Default: "64", Unit: "sessions", Min: "1", Max: "10000", Legacy: options.LegacyZeroDefault,
				Aliases: []options.Alias{{Name: "max-stream-sessions", Env: "TOOLGATE_MAX_STREAM_SESSIONS", Key: "max_stream_sessions"}},
				Help:    "sessions one multi-session stream or poll may carry", Field: func(c *Config) any { return &c.MaxStreamSessions }},
			{Name: "max-streams-per-session", Default: "8", Unit: "streams", Min: "1", Max: "1000", Legacy: options.LegacyZeroDefault,
				Help: "streams and held polls one session may hold at once; a newer one replaces the oldest", Field: func(c *Config) any { return &c.MaxStreamsPerSession }},
			dur("mcp-session-idle", "30m", "1s", "168h", "how long an MCP host's session (protocol revisions before 2026-07-28, Mcp-Session-Id) lives without a request before it expires, with its streams' events", func(c *Config) any { return &c.MCPSessionIdle }),
			limit("max-mcp-sessions-per-key", "1000", "sessions", "MCP host sessions one key (the agent key) may hold alive at once, over every node; a new one past it is 503 TOO_MANY_MCP_SESSIONS", func(c *Config) any { return &c.MaxMCPSessionsPerKey }),
		}},
		{calls, []options.Option[Config]{
			dur("default-timeout", "30s", "1ms", "168h", "call timeout when neither tool nor call sets one", func(c *Config) any { return &c.DefaultTimeout }),
			dur("min-timeout", "100ms", "1ms", "168h", "smallest timeout a tool or call may ask for", func(c *Config) any { return &c.MinTimeout }),
			dur("max-timeout", "15m", "1ms", "168h", "largest call timeout, and the longest a call may live with progress reports", func(c *Config) any { return &c.MaxTimeout }),
			dur("mcp-task-max-ttl", "24h", "1s", "720h", "longest an MCP task (a tools/call made with params.task on /mcp) is kept, whatever ttl the host asks for; a host that asks for none gets this", func(c *Config) any { return &c.MCPTaskMaxTTL }),
			dur("approval-timeout", "15m", "1ms", "168h", "how long a call may await approval before it ends timed_out", func(c *Config) any { return &c.ApprovalTimeout }),
			limit("max-open-calls-per-session", "1000", "calls", "calls not yet final one session may be the target of", func(c *Config) any { return &c.MaxOpenCallsPerSession }),
			{Name: "max-tools-per-session", Default: "256", Unit: "tools", Min: "1", Max: "100000", Legacy: options.LegacyZeroDefault,
				Aliases: []options.Alias{{Name: "max-tools", Env: "TOOLGATE_MAX_TOOLS", Key: "max_tools"}},
				Help:    "tools one session may hold", Field: func(c *Config) any { return &c.MaxToolsPerSess }},
			{Name: "tool-name-pattern", Help: "regular expression every registered tool name must also match", Field: func(c *Config) any { return &c.ToolNamePattern }},
		}},
		{sessions, []options.Option[Config]{
			dur("session-grace", "2m", "1ms", "168h", "how long an offline session's tools stay callable", func(c *Config) any { return &c.SessionGrace }),
			dur("session-ttl", "24h", "1ms", "8760h", "how long an unseen session lives before it expires", func(c *Config) any { return &c.SessionTTL }),
			dur("sweep-interval", "30s", "1ms", "24h", "how often session expiry and event pruning run", func(c *Config) any { return &c.SweepInterval }),
			dur("event-retention", "24h", "1s", "8760h", "how long stream events are kept for replay", func(c *Config) any { return &c.EventRetention }),
			{Name: "max-metadata-bytes", Default: "4096", Unit: "bytes", Min: "2", Max: "1048576", Legacy: options.LegacyZeroDefault,
				Help: "largest session metadata, in bytes of compact JSON (413 past it)", Field: func(c *Config) any { return &c.MaxMetadataBytes }},
			withAliases(rate("address-session-rate", "2", "sessions one client address (IPv6: /64) may create per second, after its burst", func(c *Config) any { return &c.SessionRate }),
				options.Alias{Name: "session-rate", Env: "TOOLGATE_SESSION_RATE", Key: "session_rate"}),
			withAliases(limit("address-session-burst", "100", "sessions", "sessions one client address may create at once", func(c *Config) any { return &c.SessionBurst }),
				options.Alias{Name: "session-burst", Env: "TOOLGATE_SESSION_BURST", Key: "session_burst"}),
		}},
		{conns, []options.Option[Config]{
			{Name: "max-body-bytes", Default: "1048576", Unit: "bytes", Min: "1024", Max: "1073741824", Legacy: options.LegacyZeroDefault,
				Aliases: []options.Alias{{Name: "max-body", Env: "TOOLGATE_MAX_BODY", Key: "max_body"}},
				Help:    "request body limit", Field: func(c *Config) any { return &c.MaxBodyBytes }},
			{Name: "max-connections", Default: "auto", Unit: "connections", Min: "1", Max: "10000000", Auto: true, Legacy: options.LegacyZeroAuto,
				Help: "connections served at once, more wait to be accepted; auto derives it from the file-descriptor limit", Field: func(c *Config) any { return &c.MaxConnections }},
			{Name: "max-connections-per-address", Default: "auto", Unit: "connections", Min: "1", Max: "10000000", Auto: true, Off: true, Legacy: options.LegacyZeroAutoNegativeOff,
				Help:  "connections one client address (IPv6: /64) may hold at once, more are closed (behind --trusted-proxies: its requests in flight, more are 429); auto is a quarter of --max-connections, at least 4, at most half",
				Field: func(c *Config) any { return &c.MaxConnectionsPerAddress }},
			dur("body-read-timeout", "10s", "1ms", "1h", "how long a client may take to send a request's headers, and then its body", func(c *Config) any { return &c.BodyReadTimeout }),
		}},
		{runs, []options.Option[Config]{
			{Name: "llm-base-url", Help: "OpenAI-compatible chat-completions endpoint for runs, e.g. http://localhost:11434/v1 (Ollama); OpenAI's when unset", Field: func(c *Config) any { return &c.LLMBaseURL }},
			{Name: "llm-model", Help: "model for runs, e.g. llama3.1; without it the runs API answers MODEL_NOT_CONFIGURED", Field: func(c *Config) any { return &c.LLMModel }},
			{Name: "llm-api-key", Help: "API key of the model endpoint, when it needs one", Field: func(c *Config) any { return &c.LLMAPIKey }},
			limit("max-runs-per-session", "4", "runs", "runs one session's token may have in progress at once (the agent key's are not counted)", func(c *Config) any { return &c.MaxRunsPerSession }),
			rate("run-rate", "0.2", "runs one session's token may start per second, after its burst", func(c *Config) any { return &c.RunRate }),
			limit("run-burst", "10", "runs", "runs one session's token may start at once", func(c *Config) any { return &c.RunBurst }),
			rate("address-run-rate", "0.5", "runs one client address (IPv6: /64) may start with session tokens per second, whatever the session, after its burst", func(c *Config) any { return &c.AddressRunRate }),
			limit("address-run-burst", "20", "runs", "runs one client address may start with session tokens at once, whatever the session", func(c *Config) any { return &c.AddressRunBurst }),
			withAliases(limit("max-runs-all-sessions", "16", "runs", "runs started with session tokens that may be in progress at once in the whole gateway, all sessions together (the agent key's are not counted)", func(c *Config) any { return &c.MaxSessionRuns }),
				options.Alias{Name: "max-session-runs", Env: "TOOLGATE_MAX_SESSION_RUNS", Key: "max_session_runs"}),
			{Name: "max-runs-per-address", Default: "auto", Unit: "runs", Min: "1", Max: "1000000", Auto: true, Off: true, Legacy: options.LegacyZeroAutoNegativeOff,
				Help:  "runs started with session tokens one client address (IPv6: /64) may have in progress at once, whatever the session; auto is a quarter of --max-runs-all-sessions, at least 1",
				Field: func(c *Config) any { return &c.MaxRunsPerAddress }},
			func() options.Option[Config] {
				o := limit("max-run-input-bytes", "8388608", "bytes", "bytes one run may send its model in all, every request resending the conversation so far (MAX_INPUT past it; a run request over it alone is 413)", func(c *Config) any { return &c.MaxRunInputBytes })
				o.Max = "1073741824"
				return o
			}(),
		}},
		{tools, []options.Option[Config]{
			{Name: "mcp-server", Env: "TOOLGATE_MCP_SERVERS", Key: "mcp_servers", Help: "import the tools of an MCP server as NAME=TARGET, named NAME__tool; TARGET is an http(s):// URL (Streamable HTTP) or a command line run with /bin/sh and spoken to over stdio; repeatable (the first flag replaces the variable's and the file's list); in the variable, one entry a line",
				Field: func(c *Config) any { return (*mcpServerList)(&c.MCPServers) }},
			{Name: "mcp-server-env", Key: "mcp_server_env", Help: "variables of the gateway's environment an --mcp-server command NAME is started with, as NAME=VAR1,VAR2 (e.g. github=GITHUB_TOKEN); a command otherwise gets only HOME, LANG, LOGNAME, PATH, SHELL, TERM, TMPDIR and USER, and never the gateway's own TOOLGATE_* variables (naming one is an error); repeatable, one entry per server; in the variable, one entry a line",
				Field: func(c *Config) any { return (*mcpEnvList)(&c.MCPServerEnv) }},
			{Name: "http-request-runs", Default: "agent", Values: []string{"agent", "all"}, Help: "which runs may use http_request: agent (the agent key's runs and calls) or all (runs a session's token started too)", Field: func(c *Config) any { return &c.HTTPRequestRuns }},
			{Name: "disable-builtins", Help: "built-in tools to leave out, e.g. http_request,memory_write", Field: func(c *Config) any { return &c.DisabledBuiltins }},
			{Name: "sandbox-dir", Help: "directory of sandboxed WebAssembly tools: NAME.wasm (WASI preview 1) with NAME.json beside it", Field: func(c *Config) any { return &c.SandboxDir }},
			{Name: "sandbox-cache-dir", Help: "directory keeping the sandboxed tools' compiled code across restarts; unset: toolgate/wazero in the user's cache directory", Field: func(c *Config) any { return &c.SandboxCacheDir }},
			{Name: "http-allow", Help: "hosts the http_request tool may reach although they resolve to loopback, private, link-local or metadata addresses", Field: func(c *Config) any { return &c.HTTPAllow }},
		}},
	}
	var table options.Table[Config]
	for _, g := range t {
		for _, o := range g.opts {
			o.Group = g.group
			if o.Env == "" {
				o.Env = "TOOLGATE_" + strings.ToUpper(strings.ReplaceAll(o.Name, "-", "_"))
			}
			if o.Key == "" {
				o.Key = strings.ReplaceAll(o.Name, "-", "_")
			}
			table = append(table, o)
		}
	}
	return table
}

// withAliases gives o the old names it is still accepted under.
func withAliases(o options.Option[Config], aliases ...options.Alias) options.Option[Config] {
	o.Aliases = aliases
	return o
}

// mcpServerList is Config.MCPServers as a list option: NAME=TARGET a line.
type mcpServerList []mcpimport.Config

// SetLines implements options.Lines: each line is one NAME=TARGET,
// checked.
func (l *mcpServerList) SetLines(lines []string) error {
	var list mcpServerList
	var errs []error
	for i, line := range lines {
		c, err := mcpimport.ParseConfig(line)
		if err != nil && len(lines) > 1 {
			err = fmt.Errorf("entry %d: %v", i+1, err)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list = append(list, c)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	*l = list
	return nil
}

// Lines implements options.Lines.
func (l *mcpServerList) Lines() []string {
	var out []string
	for _, c := range *l {
		out = append(out, c.Name+"="+c.Target)
	}
	return out
}

// mcpEnvList is Config.MCPServerEnv as a list option: NAME=VAR1,VAR2 a
// line.
type mcpEnvList []mcpimport.EnvGrant

// SetLines implements options.Lines: each line is one NAME=VAR1,VAR2,
// checked.
func (l *mcpEnvList) SetLines(lines []string) error {
	var list mcpEnvList
	var errs []error
	for i, line := range lines {
		g, err := mcpimport.ParseEnvGrant(line)
		if err != nil && len(lines) > 1 {
			err = fmt.Errorf("entry %d: %v", i+1, err)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list = append(list, g)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	*l = list
	return nil
}

// Lines implements options.Lines.
func (l *mcpEnvList) Lines() []string {
	var out []string
	for _, g := range *l {
		out = append(out, g.String())
	}
	return out
}

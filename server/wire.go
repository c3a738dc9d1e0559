package server

import (
	"context"
	"log/slog"

	"github.com/toolgate/toolgate/agenthost"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/store"
)

// Engine is the gateway's core (package engine).
type Engine = engine.Engine

// Agent is the agent host (package agenthost).
type Agent = agenthost.Agent

// AgentKeyFile is the key file of the database at dbPath: where a
// generated agent key is written, readable by its owner alone; "" for a
// database in memory, whose key is only printed.
func AgentKeyFile(dbPath string) string {
	if dbPath == "" || dbPath == ":memory:" || IsPostgresURL(dbPath) {
		return "" // a PostgreSQL deployment configures its key on every node
	}
	return dbPath + ".agent-key"
}

// parts are what Open builds over the store, in order: the agent key, the
// tools that run inside the gateway, the metrics, the engine, the agent
// host. Each is
// built from what comes before it.
type parts struct {
	metrics *metrics
	tools   *agenthost.Tools
	engine  *engine.Engine
	agent   *agenthost.Agent
}

// build builds the parts over st. When a step fails, what the earlier
// steps started is stopped again.
func build(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger) (*parts, error) {
	key, err := engine.LoadAgentKey(ctx, st, cfg.AgentKey, AgentKeyFile(cfg.DBPath), log)
	if err != nil {
		return nil, err
	}
	hostOpts := hostOptions(cfg, key)
	tools, err := agenthost.NewTools(hostOpts, st, log)
	if err != nil {
		return nil, err
	}
	m := newMetrics(st)
	eng, err := engine.New(ctx, engineOptions(cfg, key, tools, m), st, log)
	if err != nil {
		tools.Close()
		return nil, err
	}
	m.watchEngine(eng)
	agent, err := agenthost.New(tools, eng, hostOpts, log)
	if err != nil {
		eng.Close()
		tools.Close()
		return nil, err
	}
	return &parts{metrics: m, tools: tools, engine: eng, agent: agent}, nil
}

// engineOptions maps the configuration to the engine's options.
func engineOptions(cfg Config, key *engine.AgentKey, tools *agenthost.Tools, calls engine.CallCounter) engine.Options {
	return engine.Options{
		AgentKey:               key,
		ClientKey:              cfg.ClientKey,
		Heartbeat:              cfg.Heartbeat,
		PollWait:               cfg.PollWait,
		DefaultTimeout:         cfg.DefaultTimeout,
		MinTimeout:             cfg.MinTimeout,
		MaxTimeout:             cfg.MaxTimeout,
		ApprovalTimeout:        cfg.ApprovalTimeout,
		SessionGrace:           cfg.SessionGrace,
		SessionTTL:             cfg.SessionTTL,
		SweepInterval:          cfg.SweepInterval,
		EventRetention:         cfg.EventRetention,
		MaxToolsPerSess:        cfg.MaxToolsPerSess,
		MaxMetadataBytes:       cfg.MaxMetadataBytes,
		MaxOpenCallsPerSession: cfg.MaxOpenCallsPerSession,
		MaxStreamsPerSession:   cfg.MaxStreamsPerSession,
		Hooks:                  tools.Hooks,
		Builtins:               tools.Builtins(),
		OrphanRuns:             tools.OrphanRuns(),
		Calls:                  calls,
		Now:                    cfg.Now,
	}
}

// hostOptions maps the configuration to the agent host's options.
func hostOptions(cfg Config, key *engine.AgentKey) agenthost.Options {
	return agenthost.Options{
		AgentKey:          key,
		ClientKey:         cfg.ClientKey,
		DBPath:            cfg.DBPath,
		ToolNamePattern:   cfg.ToolNamePattern,
		DisabledBuiltins:  cfg.DisabledBuiltins,
		HTTPAllow:         cfg.HTTPAllow,
		HTTPRequestRuns:   cfg.HTTPRequestRuns,
		LLMBaseURL:        cfg.LLMBaseURL,
		LLMModel:          cfg.LLMModel,
		LLMAPIKey:         cfg.LLMAPIKey,
		MaxRunInputBytes:  cfg.MaxRunInputBytes,
		MaxRunsPerSession: cfg.MaxRunsPerSession,
		MaxRunsPerAddress: cfg.runsPerAddress(),
		MaxSessionRuns:    cfg.MaxSessionRuns,
		RunRate:           cfg.RunRate,
		RunBurst:          cfg.RunBurst,
		MCPServers:        cfg.mcpServers(),
		MCPOptions:        cfg.MCPOptions,
		SandboxDir:        cfg.SandboxDir,
		SandboxCacheDir:   cfg.SandboxCacheDir,
		SandboxPoll:       cfg.SandboxPoll,
		Now:               cfg.Now,
	}
}

package agenthost

import (
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpimport"
)

// Options is what the agent host is built with. The process (package
// server) fills it from its configuration, defaults applied and checked.
type Options struct {
	AgentKey  *engine.AgentKey // redacted from tool outputs
	ClientKey string           // when set, only clients given it register tools
	DBPath    string           // its password is redacted from tool outputs

	ToolNamePattern  string   // remote tool names must match it ("" for any)
	DisabledBuiltins []string // built-in tools left out
	HTTPAllow        []string // what http_request may reach
	HTTPRequestRuns  string   // "agent" or "all": the runs that may call http_request

	LLMBaseURL, LLMModel, LLMAPIKey string // the model ("" model: none)

	MaxRunInputBytes  int64   // a run's input
	MaxRunsPerSession int     // runs in progress per session's token; 0 or less: no bound
	MaxRunsPerAddress int     // runs in progress per client address; 0 or less: no bound
	MaxSessionRuns    int     // runs started by sessions' tokens in the gateway; 0 or less: no bound
	RunRate           float64 // run starts per second per session
	RunBurst          int

	MCPServers []mcpimport.Config // imported MCP servers
	MCPOptions mcpimport.Options

	SandboxDir      string // the WebAssembly tools ("" for none)
	SandboxCacheDir string
	SandboxPoll     time.Duration

	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

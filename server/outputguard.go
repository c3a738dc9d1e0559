package server

import (
	"encoding/json"
	"net/url"

	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/outputsafety"
)

// outputGuard is the agent loop's safety step (agentloop.OutputGuard)
// made of an outputsafety.Sanitizer.
type outputGuard struct{ s *outputsafety.Sanitizer }

// newOutputGuard builds the safety step with the secrets the gateway
// knows: the agent key (configured, or the one the engine read or
// generated; it changes only at a restart), the model's API key, the
// client key, and the passwords in the database URL and the imported MCP
// servers' URLs.
func newOutputGuard(e *Engine, cfg Config) outputGuard {
	secrets := []outputsafety.Secret{
		{Name: "agent_key", Value: e.AgentKey()},
		{Name: "llm_api_key", Value: cfg.LLMAPIKey},
		{Name: "client_key", Value: cfg.ClientKey},
		{Name: "database_password", Value: urlPassword(cfg.DBPath)},
	}
	for _, m := range cfg.MCPServers {
		secrets = append(secrets, outputsafety.Secret{Name: "mcp_server_password", Value: urlPassword(m.Target)})
	}
	return outputGuard{outputsafety.New(secrets...)}
}

// urlPassword is the password in a URL's user information, "" when none.
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// GuardOutput implements agentloop.OutputGuard.
func (g outputGuard) GuardOutput(tool string, output json.RawMessage, full bool) agentloop.GuardedOutput {
	mode := outputsafety.ModeFull
	if !full {
		mode = outputsafety.ModeSecretsOnly
	}
	out, rep := g.s.Sanitize(output, mode)
	res := agentloop.GuardedOutput{Output: out, Redacted: rep.Redacted}
	for _, f := range rep.Findings {
		res.Findings = append(res.Findings, agentloop.OutputFinding(f))
	}
	if rep.Flagged() {
		res.Notice = outputsafety.Notice(tool, rep)
	}
	return res
}

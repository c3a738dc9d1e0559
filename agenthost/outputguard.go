package agenthost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserve"
	"github.com/toolgate/toolgate/outputsafety"
)

// The MCP endpoint's calls' results pass through the safety step.
var _ mcpserve.OutputGuard = MCPGuard{}

// outputGuard is the agent loop's safety step (agentloop.OutputGuard)
// made of an outputsafety.Sanitizer.
type outputGuard struct{ s *outputsafety.Sanitizer }

// newOutputGuard builds the safety step with the secrets the gateway
// knows: the agent key (configured, or the one the engine read or
// generated; it changes only at a restart), the model's API key, the
// client key, and the passwords in the database URL and the imported MCP
// servers' URLs.
func newOutputGuard(cfg Options) outputGuard {
	secrets := []outputsafety.Secret{
		{Name: "agent_key", Value: cfg.AgentKey.Plain()},
		{Name: "llm_api_key", Value: cfg.LLMAPIKey},
		{Name: "client_key", Value: cfg.ClientKey},
		{Name: "database_password", Value: urlPassword(cfg.DBPath)},
	}
	for _, m := range cfg.MCPServers {
		secrets = append(secrets, outputsafety.Secret{Name: "mcp_server_password", Value: urlPassword(m.Target)})
	}
	return outputGuard{outputsafety.New(secrets...)}
}

// shortKeyLength is the length under which a key gets a warning at start.
const shortKeyLength = 16

// warnShortKeys warns, at start, of an agent key or client key shorter
// than shortKeyLength: easy to guess, and the safety step redacts its
// text from tool outputs wherever it appears, ordinary words included —
// or, under outputsafety.MinSecretLength, not at all.
func warnShortKeys(cfg Options, log *slog.Logger) {
	for _, k := range []struct{ name, flag, value string }{
		{"agent key", "--agent-key", cfg.AgentKey.Plain()},
		{"client key", "--client-key", cfg.ClientKey},
	} {
		n := utf8.RuneCountInString(k.value)
		if k.value == "" || n >= shortKeyLength {
			continue
		}
		redacted := "the safety step redacts it from tool outputs wherever its text appears"
		if len(k.value) < outputsafety.MinSecretLength {
			redacted = "too short for the safety step to redact it from tool outputs"
		}
		log.Warn(fmt.Sprintf("the %s is shorter than %d characters: easy to guess, and %s; give %s a long random value", k.name, shortKeyLength, redacted, k.flag),
			"length", n)
	}
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

// redactJSON redacts what an imported MCP server sends back
// (mcpimport.Options.Redact): the gateway's secrets and the values that
// look like credentials; any JSON value, its shape kept.
func (g outputGuard) redactJSON(v json.RawMessage) json.RawMessage {
	out, _ := g.s.Sanitize(v, outputsafety.ModeFull)
	return out
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

// MCPGuard is the safety step of the MCP endpoint's calls: their results
// pass the same one as a run's (mcpserve.OutputGuard).
type MCPGuard struct {
	Remote    *engine.Tools // the engine's tools, for their specs
	Tools     *Tools
	ClientKey string // set: a remote tool's opt-out of the safety step counts
}

// GuardCallResult implements mcpserve.OutputGuard: a call made through
// the MCP endpoint passes the same safety step as a run's, before the
// host hands its result to its model. The call record keeps the raw
// output.
func (m MCPGuard) GuardCallResult(ctx context.Context, c *toolgate.Call) mcpserve.GuardedCall {
	full := m.needsSanitization(ctx, c.SessionID, c.Tool)
	g := m.Tools.guard
	out := *c
	var findings []agentloop.OutputFinding
	var notice string
	if len(c.Output) > 0 {
		res := g.GuardOutput(c.Tool, c.Output, full)
		out.Output, findings, notice = res.Output, res.Findings, res.Notice
	}
	if c.Error != nil {
		// The code (as words), message and details a client wrote, as the
		// agent loop guards them ({"error": {code, message, details}}).
		codeWords := strings.ReplaceAll(c.Error.Code, "_", " ")
		raw, _ := json.Marshal(map[string]any{"error": map[string]any{"code": codeWords, "message": c.Error.Message, "details": c.Error.Details}})
		res := g.GuardOutput(c.Tool, raw, full)
		var back struct {
			Error struct {
				Code    string          `json:"code"`
				Message string          `json:"message"`
				Details json.RawMessage `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(res.Output, &back) == nil {
			ce := *c.Error
			ce.Message, ce.Details = back.Error.Message, back.Error.Details
			if string(ce.Details) == "null" {
				ce.Details = nil
			}
			if back.Error.Code != codeWords || slices.ContainsFunc(res.Findings, func(f agentloop.OutputFinding) bool { return f.Path == agentloop.ErrorCodePath }) {
				ce.Code = agentloop.CodeWithheld // flagged or redacted: it reaches the host's model
			}
			out.Error = &ce
		}
		findings = append(findings, res.Findings...)
		if notice == "" {
			notice = res.Notice
		}
	}
	gc := mcpserve.GuardedCall{Call: &out, Notice: notice}
	if len(findings) > 0 {
		gc.Findings, _ = json.Marshal(findings)
	}
	return gc
}

// ProgressGuard implements mcpserve.OutputGuard: a progress report
// forwarded to an MCP host is redacted as the agent loop redacts the
// progress it shows in a run's events.
func (m MCPGuard) ProgressGuard(ctx context.Context, sid, tool string) func(json.RawMessage) json.RawMessage {
	g, full := m.Tools.guard, m.needsSanitization(ctx, sid, tool)
	return func(report json.RawMessage) json.RawMessage {
		if len(report) == 0 {
			return report
		}
		return g.GuardOutput(tool, report, full).Output
	}
}

// needsSanitization reports whether the output of tool (of session sid,
// "" for a tool called without a session) passes the whole safety step:
// its spec's requires_sanitization, else the default for where it runs
// (agentloop.NeedsSanitization: a remote tool's opt-out counts only when
// the gateway requires a client key). A tool no longer listed passes it.
func (m MCPGuard) needsSanitization(ctx context.Context, sid, tool string) bool {
	var infos []toolgate.ToolInfo
	if sid == "" {
		infos = m.Remote.GatewayTools()
	} else {
		infos, _ = m.Remote.ListTools(ctx, sid)
	}
	for _, info := range infos {
		if info.Name == tool {
			return agentloop.NeedsSanitization(info.ToolSpec, info.Source, m.ClientKey != "")
		}
	}
	return true
}

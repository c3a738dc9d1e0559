package server_test

import (
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpimport"
)

// TestMCPImportEnvironmentEverything: the official reference server's
// get-env, called through the gateway, shows the variable named for it
// (--mcp-server-env) and PATH, and none of the gateway's TOOLGATE_*
// variables, its agent key's value included, nor one left unnamed.
func TestMCPImportEnvironmentEverything(t *testing.T) {
	bin := everythingBin(t)
	const agentKeyValue = "agent-key-in-the-gateways-environment"
	t.Setenv("TOOLGATE_AGENT_KEY", agentKeyValue)
	t.Setenv("TOOLGATE_LLM_API_KEY", "llm-key-in-the-gateways-environment")
	t.Setenv("EVERYTHING_GRANTED", "granted to everything")
	t.Setenv("EVERYTHING_NOT_GRANTED", "kept back")
	g := startGateway(t, func(c *serverConfig) {
		c.MCPServers = []mcpimport.Config{{Name: "everything", Target: shellQuote(bin) + " stdio"}}
		c.MCPServerEnv = []mcpimport.EnvGrant{{Server: "everything", Vars: []string{"EVERYTHING_GRANTED"}}}
		c.MCPOptions = fastMCPOptions
	})
	g.waitToolOnline(t, "everything__get-env", true)

	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "everything__get-env", "args": map[string]any{}}, 200, &rec)
	if rec.Status != "completed" {
		t.Fatalf("everything__get-env = %+v", rec)
	}
	env := string(rec.Output)
	for _, want := range []string{`EVERYTHING_GRANTED`, `granted to everything`, `PATH`, strings.ReplaceAll(os.Getenv("PATH"), `"`, `\"`)} {
		if !strings.Contains(env, want) {
			t.Errorf("get-env lacks %q: %s", want, env)
		}
	}
	for _, unwanted := range []string{"TOOLGATE_", agentKeyValue, "llm-key", "EVERYTHING_NOT_GRANTED", "kept back"} {
		if strings.Contains(env, unwanted) {
			t.Errorf("get-env shows %q: %s", unwanted, env)
		}
	}
}

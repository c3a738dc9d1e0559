package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpimport"
)

// runWithImportedTool runs the agent loop with a model that calls tool
// with args once, on a gateway importing server; it returns the finished
// run and the tools the model was shown.
func runWithImportedTool(t *testing.T, server mcpimport.Config, tool, args string) (runRecord, []string) {
	t.Helper()
	m := startFakeModel(t, toolThenAnswer(callTool("c1", tool, args)))
	g := modelGateway(t, m, func(c *serverConfig) {
		c.MCPServers, c.MCPOptions = []mcpimport.Config{server}, fastMCPOptions
	})
	g.waitToolOnline(t, tool, true)
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "use the imported tool"}, 200, &run)
	var shown []string
	for _, tl := range m.Requests()[0].Tools {
		shown = append(shown, tl.Function.Name)
	}
	stored := g.getRun(run.ID)
	if len(stored.Calls) != 1 || stored.Calls[0].Tool != tool || stored.Calls[0].Status != "completed" || stored.Calls[0].SessionID != "" {
		t.Fatalf("the run's calls = %+v", stored.Calls)
	}
	if history := g.callsOf(tool); len(history) != 1 || history[0].ID != stored.Calls[0].ID {
		t.Fatalf("history of %s = %+v", tool, history)
	}
	return run, shown
}

// TestMCPImportAgentRun: the agent loop shows the model a Go SDK server's
// tools (over Streamable HTTP) with the built-in ones, runs the one it
// picks through the gateway (stored, in the history, with the run), and
// hands the model its result.
func TestMCPImportAgentRun(t *testing.T) {
	mcpServer := startGoMCPServer(t)
	run, shown := runWithImportedTool(t, mcpimport.Config{Name: "gosdk", Target: mcpServer.URL}, "gosdk__echo", `{"text":"from the model"}`)
	if !slices.Contains(shown, "gosdk__echo") || !slices.Contains(shown, "gosdk__slow") || !slices.Contains(shown, "current_time") {
		t.Fatalf("tools shown to the model = %v", shown)
	}
	if run.Status != "finished" || !strings.Contains(run.Output, "echo: from the model") {
		t.Fatalf("run = %+v", run)
	}
}

// TestMCPImportAgentRunEverything: the agent loop uses a tool of
// @modelcontextprotocol/server-everything, started over stdio.
func TestMCPImportAgentRunEverything(t *testing.T) {
	bin := everythingBin(t)
	run, shown := runWithImportedTool(t, mcpimport.Config{Name: "everything", Target: shellQuote(bin) + " stdio"}, "everything__get-sum", `{"a":2,"b":3}`)
	if !slices.Contains(shown, "everything__echo") {
		t.Fatalf("tools shown to the model = %v", shown)
	}
	if run.Status != "finished" || !strings.Contains(run.Output, "The sum of 2 and 3 is 5.") {
		t.Fatalf("run = %+v", run)
	}
}

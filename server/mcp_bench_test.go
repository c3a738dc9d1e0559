package server_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/cputime"
)

// BenchmarkMCPRoundTrip is BenchmarkRoundTrip's call made by an MCP host:
// the official Go SDK's client calls a session's tool on
// /mcp/sessions/{sid} (its own name), at each revision, and a client
// answers it over the real stream. Compared with BenchmarkRoundTrip/http,
// it shows what the MCP layer (the SDK's JSON-RPC, the result mapping,
// the keep-alive writer) adds to a call.
func BenchmarkMCPRoundTrip(b *testing.B) {
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		b.Run(revision, func(b *testing.B) {
			g := startGateway(b, nil)
			s := g.newSession("bench")
			g.register(s, echoTool)
			stop := answeringClient(b, g, s)
			defer stop()
			cs := mcpConnect(b, g, "/mcp/sessions/"+s.ID, revision, nil)
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}
			ctx := context.Background()
			tx0 := g.Server.Store.Transactions()
			cpu0 := cputime.Process()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					b.Fatal(err)
				}
				if res.IsError {
					b.Fatalf("the call failed: %+v", res.Content)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(g.Server.Store.Transactions()-tx0)/float64(b.N), "db-tx/call")
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

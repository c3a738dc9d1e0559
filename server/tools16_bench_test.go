package server_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// BenchmarkToolsInsideTheGateway measures one call with POST /v1/calls,
// stored and waited for, of tools that run inside the gateway (issue 16):
// a built-in that only reads (current_time), a memory note written and
// one searched, and a sandboxed WebAssembly module (the echo test module,
// compiled once; each call instantiates it afresh). Besides the wall clock
// it reports the gateway process's CPU per call (the caller runs in the
// same process), steadier than the wall clock on a shared machine.
//
//	go test -run '^$' -bench BenchmarkToolsInsideTheGateway -count 6 ./server
func BenchmarkToolsInsideTheGateway(b *testing.B) {
	g, _ := sandboxGateway(b, nil, func(dir string) { sandboxtest.Install(b, dir, "echo", "shout", sandboxSpec) })
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "memory_write",
		"args": map[string]any{"key": "printer", "text": "the printer on floor 3 needs toner"}}, 200, nil)
	for _, bc := range []struct{ name, tool, args string }{
		{"current_time", "current_time", `{"time_zone": "Europe/Paris"}`},
		{"memory_write", "memory_write", `{"key": "bench", "text": "a note the benchmark writes again and again"}`},
		{"memory_search", "memory_search", `{"query": "printer toner"}`},
		{"sandbox_echo", "shout", `{"text": "hello"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := map[string]any{"tool": bc.tool, "args": json.RawMessage(bc.args)}
			cpu0 := cputime.Process()
			b.ResetTimer()
			for b.Loop() {
				var rec callRecord
				g.call("POST", "/v1/calls", testAgentKey, body, 200, &rec)
				if rec.Status != "completed" {
					b.Fatalf("%s: %+v", bc.tool, rec)
				}
			}
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

//go:build unix

package mcpimport_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpimport"
)

// goroutines returns the stacks of the goroutines running now, by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [") // "goroutine 12 [running]:"
		out[id] = g
	}
	return out
}

// newGoroutines returns the stacks of the goroutines running now that
// were not running in before, whatever code they run (the importer's, the
// SDK's, net/http's, os/exec's or anything else), but for the runtime's
// and the testing package's own.
func newGoroutines(before map[string]string) []string {
	var out []string
	for id, g := range goroutines() {
		if _, old := before[id]; old || strings.Contains(g, "testing.tRunner") || strings.Contains(g, "os/signal.") {
			continue
		}
		out = append(out, g)
	}
	return out
}

// TestCloseLeavesNothingRunning: after Close (and the test's server's
// stop), no goroutine started since the test began is left: none of the
// importer, of its SDK client session, of its HTTP connections, of its
// child process, nor any other, for a server over each transport.
func TestCloseLeavesNothingRunning(t *testing.T) {
	before := goroutines()
	h := startHTTPMCPServer(t, newTestMCPServer(nil, newServerEvents()), &mcp.StreamableHTTPOptions{Stateless: true})
	for _, cfg := range []mcpimport.Config{
		{Name: "overhttp", Target: h.URL()},
		{Name: "overstdio", Target: stdioServerCommand(t, "")},
	} {
		s := startImport(t, cfg, fastOptions(nil))
		wantOutput(t, s, cfg.Name+"__echo", `{"text":"x"}`, `"echo: x"`)
		s.Close()
	}
	h.stop() // the server's side of the connections
	var left []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("left running:\n%s", strings.Join(left, "\n\n"))
		}
	})
	testwait.Until(t, 10*time.Second, "no goroutine started since the test began left after Close", func() bool {
		left = newGoroutines(before)
		return len(left) == 0
	})
}

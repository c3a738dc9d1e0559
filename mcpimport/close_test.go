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

// clientGoroutines returns the stacks of the goroutines running the
// importer's code or the SDK's client side (the HTTP connections it
// opened included).
func clientGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "toolgate/mcpimport.") || strings.Contains(g, "go-sdk/mcp.(*streamableClientConn)") ||
			strings.Contains(g, "go-sdk/mcp.(*ClientSession)") || strings.Contains(g, "net/http.(*persistConn)") || strings.Contains(g, "os/exec.") {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseLeavesNothingRunning: after Close, no goroutine of the
// importer, of its SDK client session, of its HTTP connections or of its
// child process is left, for a server over each transport.
func TestCloseLeavesNothingRunning(t *testing.T) {
	h := startHTTPMCPServer(t, newTestMCPServer(nil, newServerEvents()), &mcp.StreamableHTTPOptions{Stateless: true})
	testwait.Until(t, 5*time.Second, "no client goroutines before", func() bool { return len(clientGoroutines()) == 0 })
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
	testwait.Until(t, 10*time.Second, "no client goroutines after Close", func() bool {
		left = clientGoroutines()
		return len(left) == 0
	})
}

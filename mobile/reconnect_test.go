package mobile_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// TestStreamReconnectsPromptlyAfterManyRestarts restarts the gateway
// (SIGKILL, then start on the same database and address) eight times under
// one connected client: after each restart the client is back on the
// stream and answers a call within a couple of seconds. The client's
// reconnect policy (internal/reconnect) counts failures from zero again
// once a stream has come up, rather than growing its backoff with every
// restart the client has lived through (it reached its 30 s maximum after
// about a dozen).
func TestStreamReconnectsPromptlyAfterManyRestarts(t *testing.T) {
	g := gatewaytest.Start(t, "--log-level", "warn")
	client, _ := connectEcho(t, g.URL, func(c *mobile.Client) { setTransport(t, c, mobile.TransportSSE) }, "connected sse", 10*time.Second)
	const restarts = 8
	var took []time.Duration
	for range restarts {
		g.Restart(t)
		restarted := time.Now()
		if call := callTool(t, g, client.SessionID(), "echo", `{}`); call.Status != toolgate.StatusCompleted {
			t.Fatalf("call after a restart: %+v", call)
		}
		took = append(took, time.Since(restarted).Round(time.Millisecond))
	}
	t.Logf("from each restart to the call's answer: %v", took)
	// A stream that was live is reopened within 250 ms, and the attempts
	// while the gateway restarts back off from 250 ms; had the backoff
	// grown with each restart, the eighth would wait seconds.
	if last := took[restarts-1]; last > 2*time.Second {
		t.Errorf("the call after restart %d took %s: the client's reconnection backoff grew with the restarts (%v)", restarts, last, took)
	}
}

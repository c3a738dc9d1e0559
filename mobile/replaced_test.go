package mobile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// Two clients of one session on a gateway that keeps one stream or poll
// per session: each connection replaces the other's, and the clients back
// off before they reconnect rather than replace each other at once, again
// and again.
func TestReplacedClientsBackOff(t *testing.T) {
	g := gatewaytest.Start(t, "--max-streams-per-session", "1")
	for _, transport := range []string{mobile.TransportPoll, mobile.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			store := mobile.NewMemorySessionStore()
			first, firstStates := newTestClient(t, g, transport)
			first.SetSessionStore(store)
			if err := first.Connect(); err != nil {
				t.Fatal(err)
			}
			firstStates.waitFor(t, "connected "+transport, 10*time.Second)
			second, secondStates := newTestClient(t, g, transport)
			second.SetSessionStore(store)
			if err := second.Connect(); err != nil {
				t.Fatal(err)
			}
			secondStates.waitFor(t, "connected "+transport, 10*time.Second)
			if first.SessionID() != second.SessionID() {
				t.Fatalf("the clients use sessions %s and %s, want one", first.SessionID(), second.SessionID())
			}
			time.Sleep(2 * time.Second) // the window the reconnects are counted in
			replaced := 0
			for _, r := range []*stateRecorder{firstStates, secondStates} {
				r.mu.Lock()
				for _, c := range r.changes {
					if strings.Contains(c, "replaced by a newer connection") {
						replaced++
					}
				}
				r.mu.Unlock()
			}
			// Backing off (from 250 ms, growing), the two are replaced a
			// handful of times in 2 s; reconnecting at once, hundreds.
			if replaced == 0 || replaced > 30 {
				t.Fatalf("%d replacements in 2 s, want a few", replaced)
			}
		})
	}
}

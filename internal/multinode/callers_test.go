package multinode_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// callOutcome is what one caller saw of one call.
type callOutcome struct {
	Key, SessionID, ID string
	Final              toolgate.Call
	// KillsDuring is how many kills happened while the caller waited.
	KillsDuring int64
	Err         error
}

// caller makes calls one after another through baseURL (the balancer)
// with an Idempotency-Key, re-attaching with GET /v1/calls/{id}?wait_ms=
// (or sending the same POST again when the create got no reply) after a
// connection error, until stop is closed.
type caller struct {
	number   int
	baseURL  string
	sessions []string
	kills    *atomic.Int64

	mu       sync.Mutex
	outcomes []callOutcome
	current  string
}

// callTimeout is every call's timeout: far longer than a node is ever
// down, so a call that does not complete was lost, not slow.
const callTimeout = time.Minute

func (c *caller) run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("multinode-caller%d-call%d", c.number, i)
		c.mu.Lock()
		c.current = key
		c.mu.Unlock()
		out := c.makeCall(key, c.sessions[(c.number+i)%len(c.sessions)], i)
		c.mu.Lock()
		c.outcomes = append(c.outcomes, out)
		c.current = ""
		c.mu.Unlock()
	}
}

func (c *caller) inFlight() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

func (c *caller) results() []callOutcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]callOutcome(nil), c.outcomes...)
}

// makeCall follows one call to its final state; every other call waits on
// the create, the others are created with "wait": false and waited for.
func (c *caller) makeCall(key, sessionID string, n int) (out callOutcome) {
	out = callOutcome{Key: key, SessionID: sessionID}
	killsAtStart := c.kills.Load()
	defer func() { out.KillsDuring = c.kills.Load() - killsAtStart }()
	started := time.Now()
	for time.Since(started) < callTimeout+30*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var status int
		var call toolgate.Call
		var err error
		if out.ID == "" {
			status, call, err = createCall(ctx, c.baseURL, key, sessionID, map[string]any{"n": n}, callTimeout, n%2 == 0)
		} else {
			status, call, err = readCall(ctx, c.baseURL, out.ID, 10*time.Second)
		}
		cancel()
		switch {
		case status >= 500 || (err != nil && status == 0):
			// No reply (the node was killed), or one from a node going
			// down: the same key (or the known id) finds the call.
			time.Sleep(50 * time.Millisecond)
			continue
		case err != nil:
			out.Err = fmt.Errorf("%s: %v", key, err)
			return out
		case status != http.StatusOK && status != http.StatusAccepted:
			out.Err = fmt.Errorf("%s: unexpected status %d", key, status)
			return out
		case out.ID != "" && call.ID != out.ID:
			out.Err = fmt.Errorf("%s: the call's id changed from %s to %s", key, out.ID, call.ID)
			return out
		}
		out.ID = call.ID
		if call.Status.Final() {
			out.Final = call
			return out
		}
	}
	out.Err = fmt.Errorf("%s: no final state within %s", key, callTimeout+30*time.Second)
	return out
}

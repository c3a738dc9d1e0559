package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// CallOutcome is what one Caller saw of one call.
type CallOutcome struct {
	Key       string // the Idempotency-Key it was made with
	SessionID string
	ID        string        // the call's id, once a reply named it
	Final     toolgate.Call // the call in its final state
	Started   time.Time
	Ended     time.Time
	// KillsDuring is how many kills happened while the caller waited.
	KillsDuring int64
	// Posts counts the POST /v1/calls sent (more than one when a reply
	// was lost); Reattaches the GET /v1/calls/{id}?wait_ms= sent after a
	// request that got no reply.
	Posts, Reattaches int
	// Err is set when the caller met a reply it cannot handle, or gave up.
	Err error
}

// Caller makes calls one after another with POST /v1/calls and an
// Idempotency-Key, every other one waiting on the create and the others
// created with "wait": false and waited for with GET
// /v1/calls/{id}?wait_ms=. After a request that got no reply (a connection
// error, a reply cut off) or a 5xx, it sends the same POST again while it
// has no call id, and re-attaches with the GET once it has one, until the
// call is in a final state. Set its fields, then call Run.
type Caller struct {
	// Number tells callers apart: its call i has the key
	// "<KeyPrefix>-caller<Number>-call<i>" and goes to the session
	// Sessions[(Number+i) % len(Sessions)].
	Number    int
	KeyPrefix string
	Sessions  []string
	BaseURL   string // a gateway, or a balancer in front of several
	AgentKey  string
	Tool      string // the tool called, with the arguments {"n": i}
	// Kills counts the kills of the test, read into
	// CallOutcome.KillsDuring.
	Kills *atomic.Int64
	// CallTimeout is every call's timeout_ms.
	CallTimeout time.Duration
	// GiveUp is how long the caller follows one call before it records
	// the call as having no final state.
	GiveUp time.Duration
	// RequestTimeout bounds each request; 0 leaves it to HTTP.
	RequestTimeout time.Duration
	HTTP           *http.Client

	mu       sync.Mutex
	outcomes []CallOutcome
	current  string // the key in flight, for a stuck-caller message
}

// retryPause is how long a caller waits before trying again after a
// request that got no reply (the gateway is down or restarting).
const retryPause = 50 * time.Millisecond

// reattachWait is the wait_ms of a GET /v1/calls/{id}.
const reattachWait = 10 * time.Second

// Run makes calls until stop is closed.
func (c *Caller) Run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("%s-caller%d-call%d", c.KeyPrefix, c.Number, i)
		c.mu.Lock()
		c.current = key
		c.mu.Unlock()
		out := c.makeCall(key, c.Sessions[(c.Number+i)%len(c.Sessions)], i)
		c.mu.Lock()
		c.outcomes = append(c.outcomes, out)
		c.current = ""
		c.mu.Unlock()
	}
}

// InFlight returns the key of the call the caller is waiting for, if any.
func (c *Caller) InFlight() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// Outcomes returns what the caller saw of each call it made so far.
func (c *Caller) Outcomes() []CallOutcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CallOutcome(nil), c.outcomes...)
}

// makeCall follows one call to its final state.
func (c *Caller) makeCall(key, sessionID string, n int) (out CallOutcome) {
	out = CallOutcome{Key: key, SessionID: sessionID, Started: time.Now()}
	killsAtStart := c.Kills.Load()
	defer func() {
		out.Ended = time.Now()
		out.KillsDuring = c.Kills.Load() - killsAtStart
	}()
	body, _ := json.Marshal(map[string]any{
		"session_id": sessionID, "tool": c.Tool, "args": map[string]any{"n": n},
		"timeout_ms": c.CallTimeout.Milliseconds(), "wait": n%2 == 0,
	})
	failed := false // the last request got no reply
	for time.Since(out.Started) < c.GiveUp {
		var status int
		var data []byte
		var err error
		method, path := http.MethodPost, "/v1/calls"
		if out.ID == "" {
			out.Posts++
			status, data, err = c.send(method, path, key, body)
		} else {
			if failed {
				out.Reattaches++
			}
			method, path = http.MethodGet, fmt.Sprintf("/v1/calls/%s?wait_ms=%d", out.ID, reattachWait.Milliseconds())
			status, data, err = c.send(method, path, "", nil)
		}
		if err != nil || status >= 500 {
			// No reply (the gateway was killed), or one from a gateway
			// going down: the call may or may not exist; the same key
			// (or the known id) finds it.
			failed = true
			time.Sleep(retryPause)
			continue
		}
		failed = false
		if status != http.StatusOK && status != http.StatusAccepted {
			out.Err = fmt.Errorf("%s: %s %s: unexpected status %d: %s", key, method, path, status, data)
			return out
		}
		var call toolgate.Call
		if err := json.Unmarshal(data, &call); err != nil {
			out.Err = fmt.Errorf("%s: %s %s: %v: %s", key, method, path, err, data)
			return out
		}
		if out.ID != "" && call.ID != out.ID {
			out.Err = fmt.Errorf("%s: the call's id changed from %s to %s", key, out.ID, call.ID)
			return out
		}
		out.ID = call.ID
		if call.Status.Final() {
			out.Final = call
			return out
		}
	}
	out.Err = fmt.Errorf("%s: no final state within %s", key, c.GiveUp)
	return out
}

// send sends one request and returns the status and the whole body; an
// error means no reply (a reply cut off is as good as none).
func (c *Caller) send(method, path, key string, body []byte) (int, []byte, error) {
	ctx := context.Background()
	if c.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.RequestTimeout)
		defer cancel()
	}
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, reader)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.AgentKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, data, nil
}

// SameJSON reports whether two JSON texts hold the same value: how an
// output a caller was given is compared with what the API or the
// database holds.
func SameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

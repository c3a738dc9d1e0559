package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// callOutcome is what one caller saw of one call.
type callOutcome struct {
	Key       string
	SessionID string
	ID        string
	Final     toolgate.Call
	Started   time.Time
	Ended     time.Time
	// KillsDuring is how many kills happened while the caller waited.
	KillsDuring int64
	// Posts counts the POST /v1/calls sent (more than one when a reply
	// was lost); Reattaches the GET /v1/calls/{id}?wait_ms= sent after a
	// request that got no reply.
	Posts, Reattaches int
	// Err is set when the caller met a reply it cannot handle.
	Err error
}

// caller makes calls one after another with POST /v1/calls (an
// Idempotency-Key; wait, or "wait": false and GET /v1/calls/{id}?wait_ms=),
// re-attaches with GET /v1/calls/{id}?wait_ms= after a
// connection error, and sends the same POST again when the create got no
// reply, until stop is closed.
type caller struct {
	number   int
	baseURL  string
	agentKey string
	sessions []string
	kills    *atomic.Int64
	http     *http.Client

	mu       sync.Mutex
	outcomes []callOutcome
	current  string // the key in flight, for a stuck-caller message
}

// callTimeout is every call's timeout: far longer than the gateway is ever
// down, so a call that does not complete was lost, not slow.
const callTimeout = 2 * time.Minute

// retryPause is how long a caller waits before trying again after a
// connection error (the gateway is down or restarting).
const retryPause = 50 * time.Millisecond

func newCaller(number int, baseURL, agentKey string, sessions []string, kills *atomic.Int64) *caller {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	return &caller{
		number: number, baseURL: baseURL, agentKey: agentKey, sessions: sessions, kills: kills,
		// A safety net only: the gateway answers a wait within the
		// call's timeout, and a kill resets the connection at once.
		http: &http.Client{Transport: transport, Timeout: callTimeout + 30*time.Second},
	}
}

// run makes calls until stop is closed.
func (c *caller) run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("chaos-caller%d-call%d", c.number, i)
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

// inFlight returns the key of the call the caller is waiting for, if any.
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

// makeCall follows one call to its final state.
func (c *caller) makeCall(key, sessionID string, n int) (out callOutcome) {
	out = callOutcome{Key: key, SessionID: sessionID, Started: time.Now()}
	killsAtStart := c.kills.Load()
	defer func() {
		out.Ended = time.Now()
		out.KillsDuring = c.kills.Load() - killsAtStart
	}()
	// Every other call waits on the create; the others are created with
	// "wait": false and waited for with GET /v1/calls/{id}?wait_ms=.
	body, _ := json.Marshal(map[string]any{
		"session_id": sessionID, "tool": chaosTool, "args": map[string]any{"n": n},
		"timeout_ms": callTimeout.Milliseconds(), "wait": n%2 == 0,
	})
	failed := false // the last request got no reply
	for time.Since(out.Started) < callTimeout+time.Minute {
		var record toolgate.Call
		var status int
		var err error
		if out.ID == "" {
			out.Posts++
			status, err = c.send(http.MethodPost, "/v1/calls", key, body, &record)
		} else {
			if failed {
				out.Reattaches++
			}
			status, err = c.send(http.MethodGet, "/v1/calls/"+out.ID+"?wait_ms=10000", "", nil, &record)
		}
		switch {
		case err != nil || status >= 500:
			// No reply (the gateway was killed), or one from a gateway
			// going down: the call may or may not exist; the same key
			// (or the known id) finds it.
			failed = true
			time.Sleep(retryPause)
			continue
		case status != http.StatusOK && status != http.StatusAccepted:
			out.Err = fmt.Errorf("%s: unexpected status %d (%+v)", key, status, record)
			return out
		case out.ID != "" && record.ID != out.ID:
			out.Err = fmt.Errorf("%s: the call's id changed from %s to %s", key, out.ID, record.ID)
			return out
		}
		failed = false
		out.ID = record.ID
		if record.Status.Final() {
			out.Final = record
			return out
		}
	}
	out.Err = fmt.Errorf("%s: no final state within %s", key, callTimeout+time.Minute)
	return out
}

// send sends one caller request and decodes a reply into out.
func (c *caller) send(method, path, key string, body []byte, out any) (int, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.baseURL+path, reader)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.agentKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err // the reply was cut off: as good as none
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		if err := json.Unmarshal(data, out); err != nil {
			return 0, errors.Join(fmt.Errorf("%s %s: %s", method, path, data), err)
		}
	}
	return resp.StatusCode, nil
}

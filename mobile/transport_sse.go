package mobile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"
	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate"
)

// streamWatch is what the stream's callbacks tell its watchdog.
type streamWatch struct {
	responded   atomic.Bool  // the current connection got a 200
	ready       atomic.Bool  // the current connection sent ready
	everReady   atomic.Bool  // some connection of this stream sent ready
	connStart   atomic.Int64 // unix nanoseconds of the current connection's 200
	lastEvent   atomic.Int64 // unix nanoseconds of the last event
	heartbeat   atomic.Int64 // nanoseconds, from the ready event
	sessionLost atomic.Bool
	replaced    atomic.Bool // the stream ended with stream_replaced
}

// runStream receives calls over Server-Sent Events through r3labs/sse's
// client, which reconnects by itself with Last-Event-ID. A watchdog ends the
// stream when the gateway answered but sent no ready event in time (a proxy
// holds the stream back: outcomeHeldBack) or when neither event nor ping
// came for two heartbeats (outcomeRetry). The second result says whether the
// stream was healthy at some point.
func (c *Client) runStream(ctx context.Context) (streamOutcome, bool) {
	sess, _ := c.credentials()
	c.mu.Lock()
	readyTimeout, heartbeat, maxEventBytes := c.readyTimeout, c.heartbeat, c.maxEventBytes
	c.mu.Unlock()
	if heartbeat <= 0 {
		heartbeat = defaultHeartbeat
	}
	attemptCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	watch := &streamWatch{}
	watch.heartbeat.Store(int64(heartbeat))
	stream := sse.NewClient(c.api.baseURL+sessionPath(sess.id, "/events"), sse.ClientMaxBufferSize(maxEventBytes))
	stream.Connection = c.api.long
	stream.Headers["Authorization"] = "Bearer " + sess.token
	if cursor, ok := c.streamPosition(); ok {
		stream.LastEventID.Store([]byte(strconv.FormatInt(cursor, 10)))
	}
	// The library's default backoff gives up after 15 minutes; this one
	// retries until the client closes. The library resets it only when
	// the subscription starts, so the ready event resets it (below): a
	// stream that came up again starts its next reconnection from the
	// first step, however many restarts of the gateway it lived through.
	reconnect := newRetryBackoff(attemptCtx)
	stream.ReconnectStrategy = reconnect
	stream.ReconnectNotify = func(err error, wait time.Duration) {
		c.setState(StateReconnecting, err.Error())
	}
	stream.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			watch.ready.Store(false)
			watch.connStart.Store(time.Now().UnixNano())
			watch.responded.Store(true)
			return nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		apiErr := decodeAPIError(resp.StatusCode, data)
		if apiErr.sessionLost() {
			watch.sessionLost.Store(true)
			return backoff.Permanent(apiErr)
		}
		return apiErr
	}
	onEvent := func(msg *sse.Event) {
		watch.lastEvent.Store(time.Now().UnixNano())
		eventType := string(msg.Event)
		switch eventType {
		case "":
			return // a retry: line on its own
		case toolgate.EventReady:
			var ready struct {
				HeartbeatMS int64 `json:"heartbeat_ms"`
			}
			if json.Unmarshal(msg.Data, &ready) == nil && ready.HeartbeatMS > 0 {
				watch.heartbeat.Store(int64(time.Duration(ready.HeartbeatMS) * time.Millisecond))
			}
			watch.ready.Store(true)
			watch.everReady.Store(true)
			// The library calls onEvent and the backoff on the same
			// goroutine, so this needs no lock.
			reconnect.Reset()
			c.setState(StateConnected, TransportSSE)
		case eventStreamReplaced:
			watch.replaced.Store(true)
		case toolgate.EventToolCallRequest, toolgate.EventCallCancelled:
			if seq, err := strconv.ParseInt(string(msg.ID), 10, 64); err == nil {
				c.advanceCursor(seq)
			}
		}
		c.handleEvent(eventType, msg.Data, sess)
	}

	ended := make(chan error, 1)
	go func() { ended <- stream.SubscribeRawWithContext(attemptCtx, onEvent) }()
	return c.watchStream(ctx, cancel, ended, watch, readyTimeout)
}

// watchStream waits for the stream to end, the client to close, the
// gateway to refuse the session, or the stream to stall.
func (c *Client) watchStream(ctx context.Context, cancel context.CancelFunc, ended <-chan error, watch *streamWatch, readyTimeout time.Duration) (streamOutcome, bool) {
	tick := time.NewTicker(max(readyTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	outcome := func(o streamOutcome) (streamOutcome, bool) {
		cancel()
		<-ended
		return o, watch.everReady.Load()
	}
	for {
		select {
		case err := <-ended:
			switch {
			case ctx.Err() != nil:
				return outcomeStopped, watch.everReady.Load()
			case watch.sessionLost.Load():
				return outcomeSessionLost, watch.everReady.Load()
			case watch.replaced.Load():
				c.setState(StateReconnecting, "replaced by a newer connection of this session")
				return outcomeReplaced, watch.everReady.Load()
			case err != nil:
				c.setState(StateReconnecting, err.Error())
			default:
				c.setState(StateReconnecting, "the gateway ended the stream")
			}
			return outcomeRetry, watch.everReady.Load()
		case <-ctx.Done():
			return outcome(outcomeStopped)
		case <-c.sessionLostChan():
			return outcome(outcomeSessionLost)
		case <-tick.C:
			now := time.Now()
			if !watch.responded.Load() {
				continue // not connected yet: the library keeps retrying
			}
			if !watch.ready.Load() {
				if now.Sub(time.Unix(0, watch.connStart.Load())) > readyTimeout {
					c.setState(StateReconnecting, "no ready event on the stream")
					return outcome(outcomeHeldBack)
				}
				continue
			}
			stallAfter := 2*time.Duration(watch.heartbeat.Load()) + readyTimeout
			if now.Sub(time.Unix(0, watch.lastEvent.Load())) > stallAfter {
				c.setState(StateReconnecting, fmt.Sprintf("no event or ping for %s", stallAfter))
				return outcome(outcomeRetry)
			}
		}
	}
}

package mobile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"
	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate"
)

// streamWatch is what the stream's callbacks tell its watchdog.
type streamWatch struct {
	sent        atomic.Bool  // the current connection's request was written
	ready       atomic.Bool  // the current connection sent ready
	connStart   atomic.Int64 // unix nanoseconds of the current connection's request written
	readyAt     atomic.Int64 // unix nanoseconds of the current connection's ready
	lastEvent   atomic.Int64 // unix nanoseconds of the last event
	heldBack    atomic.Bool  // a connection's ready came only with its end: poll instead
	heartbeat   atomic.Int64 // nanoseconds, from the ready event
	sessionLost atomic.Bool
	replaced    atomic.Bool // the stream ended with stream_replaced
}

// runStream receives calls over Server-Sent Events through r3labs/sse's
// client, which reconnects by itself with Last-Event-ID, waiting what the
// client's reconnect policy says (sseReconnect). A watchdog ends the stream
// when no ready event came within the ready timeout of the request being
// written (a proxy holds the stream back, perhaps its very headers:
// outcomeHeldBack) or when neither event nor ping came for two heartbeats
// (outcomeRetry). A connection whose ready came only together with its
// end (a proxy that buffers and cuts before the ready timeout) is held
// back too. The stream asks the heartbeat learned for this gateway (see
// pathLessons.streamEnded).
func (r *receiver) runStream(ctx context.Context) streamOutcome {
	c := r.client
	sess, _ := c.session.get()
	c.mu.Lock()
	readyTimeout, heartbeat, maxEventBytes, mode := c.readyTimeout, c.heartbeat, c.maxEventBytes, c.transportMode
	c.mu.Unlock()
	if heartbeat <= 0 {
		heartbeat = defaultHeartbeat
	}
	watch := &streamWatch{}
	watch.heartbeat.Store(int64(heartbeat))
	// The ready clock starts when the request is written, not when the
	// reply's headers come: a buffering proxy may hold those too. A dial
	// that fails writes nothing, and stays the library's retry.
	attemptCtx, cancel := context.WithCancel(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err != nil {
				return
			}
			watch.ready.Store(false)
			watch.connStart.Store(time.Now().UnixNano())
			watch.sent.Store(true)
		},
	}))
	defer cancel()
	streamURL := func(asked time.Duration) string {
		u := c.api.baseURL + sessionPath(sess.id, "/events")
		if asked > 0 {
			u += "?heartbeat_ms=" + strconv.FormatInt(asked.Milliseconds(), 10)
		}
		return u
	}
	stream := sse.NewClient(streamURL(gatewayPaths.heartbeat(c.api.baseURL)), sse.ClientMaxBufferSize(maxEventBytes))
	stream.Connection = c.api.long
	stream.Headers["Authorization"] = "Bearer " + sess.token
	if cursor, ok := c.session.position(); ok {
		stream.LastEventID.Store([]byte(strconv.FormatInt(cursor, 10)))
	}
	// connEnded looks at each connection of the stream once it is over
	// (called on the library's goroutine, before it reconnects, or after
	// the subscription ended): a live stream cut while idle teaches the
	// heartbeat to ask, which the library's next connection then asks.
	connEnded := func() bool {
		asked, changed, heldBack := r.streamConnEnded(watch)
		if changed {
			stream.URL = streamURL(asked)
		}
		if heldBack && mode == TransportAuto {
			watch.heldBack.Store(true) // ends the stream: the poll stands in
			return true
		}
		return false
	}
	// The library's default backoff gives up after 15 minutes; the
	// client's policy retries until the client closes.
	stream.ReconnectStrategy = backoff.WithContext(sseReconnect{policy: c.reconnect, ended: connEnded}, attemptCtx)
	stream.ReconnectNotify = func(err error, wait time.Duration) {
		c.setState(StateReconnecting, err.Error())
	}
	stream.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		apiErr := decodeReplyError(resp, data)
		if apiErr.sessionLost() {
			watch.sessionLost.Store(true)
			return backoff.Permanent(apiErr)
		}
		if resp.StatusCode == http.StatusBadRequest && resp.Request != nil && resp.Request.Header.Get("Last-Event-ID") != "" {
			// The cursor is beyond the session's stream (a database
			// restored from a backup, every event pruned): connect again
			// without one, which sends every open call.
			stream.LastEventID.Store([]byte(nil))
			c.session.dropCursor()
		}
		noteRefusal(c.reconnect, apiErr)
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
			watch.readyAt.Store(time.Now().UnixNano())
			watch.ready.Store(true)
			c.reconnect.WentLive()
			c.path.noteStream(time.Duration(watch.heartbeat.Load()))
			c.setState(StateConnected, TransportSSE)
		case eventStreamReplaced:
			watch.replaced.Store(true)
		case toolgate.EventToolCallRequest, toolgate.EventCallCancelled:
			if seq, err := strconv.ParseInt(string(msg.ID), 10, 64); err == nil {
				c.session.advance(seq)
			}
		}
		r.handleEvent(eventType, msg.Data, sess)
	}

	ended := make(chan error, 1)
	go func() {
		err := stream.SubscribeRawWithContext(attemptCtx, onEvent)
		connEnded() // the last connection, which the library did not retry
		ended <- err
	}()
	return r.watchStream(ctx, cancel, ended, watch, readyTimeout)
}

// heldTogether is how soon after its ready a connection may end for the
// ready to count as handed over only with the end: a proxy that buffered
// the stream (and cut it before the ready timeout) delivers the headers,
// ready, any events and the end in one burst.
const heldTogether = 100 * time.Millisecond

// streamConnEnded records the end of one connection of a stream: when it
// had gone live, whether it was cut while idle (pathLessons.streamEnded),
// which may change the heartbeat streams to this gateway ask, and whether
// its ready came only together with its end (held back). It looks at each
// connection once (a later call finds it not live).
func (r *receiver) streamConnEnded(watch *streamWatch) (asked time.Duration, changed, heldBack bool) {
	c := r.client
	watch.sent.Store(false)
	if !watch.ready.Swap(false) {
		return 0, false, false
	}
	age := time.Since(time.Unix(0, watch.readyAt.Load()))
	cut := !watch.replaced.Load()
	if cut && age < heldTogether {
		c.path.noteCut(age, "the stream's ready came only with its end (a proxy buffers it)")
		return 0, false, true
	}
	idle := time.Since(time.Unix(0, watch.lastEvent.Load()))
	heartbeat := time.Duration(watch.heartbeat.Load())
	if cut {
		c.path.noteCut(age, fmt.Sprintf("the stream ended after %s, %s without a byte", age.Round(time.Millisecond), idle.Round(time.Millisecond)))
	}
	asked, changed = gatewayPaths.streamEnded(c.api.baseURL, cut, idle, heartbeat)
	if changed {
		c.log(LevelInfo, fmt.Sprintf("the stream was cut twice after about %s without a byte (a proxy's idle limit?); asking a heartbeat of %s",
			idle.Round(100*time.Millisecond), asked))
	}
	return asked, changed, false
}

// watchStream waits for the stream to end, the client to close, the
// gateway to refuse the session, or the stream to stall.
func (r *receiver) watchStream(ctx context.Context, cancel context.CancelFunc, ended <-chan error, watch *streamWatch, readyTimeout time.Duration) streamOutcome {
	c := r.client
	tick := time.NewTicker(max(readyTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	outcome := func(o streamOutcome) streamOutcome {
		cancel()
		<-ended
		return o
	}
	for {
		select {
		case err := <-ended:
			switch {
			case ctx.Err() != nil:
				return outcomeStopped
			case watch.sessionLost.Load():
				return outcomeSessionLost
			case watch.heldBack.Load():
				c.setState(StateReconnecting, "the stream's ready came only with its end")
				return outcomeHeldBack
			case watch.replaced.Load():
				c.setState(StateReconnecting, "replaced by a newer connection of this session")
				return outcomeReplaced
			case err != nil:
				c.setState(StateReconnecting, err.Error())
			default:
				c.setState(StateReconnecting, "the gateway ended the stream")
			}
			return outcomeRetry
		case <-ctx.Done():
			return outcome(outcomeStopped)
		case <-r.lost:
			return outcome(outcomeSessionLost)
		case <-tick.C:
			now := time.Now()
			if !watch.sent.Load() {
				continue // no request written yet: the library keeps retrying
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

package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/reconnect"
)

// pollEvent is one event of a poll reply: its sequence number and type,
// with the event's fields beside them (or, from a gateway that nests them,
// under data).
type pollEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// runPolls receives calls by long-poll until an error, the client closing,
// or (when it stands in for a held-back stream: climb is not nil) a probe
// of the stream passing (see probeStream). Each poll is held for the poll
// wait (the app's, else the gateway's poll_wait_ms), shortened after a
// held poll failed on the way (see pathLessons.pollFailed).
func (r *receiver) runPolls(ctx context.Context, climb *reconnect.Climb) streamOutcome {
	c := r.client
	sess, _ := c.session.get()
	c.mu.Lock()
	wait := c.pollWait
	c.mu.Unlock()
	if wait <= 0 {
		wait = defaultPollWait
	}
	c.path.noteStream(0)
	var passed atomic.Bool
	if climb != nil {
		pollCtx, stopPolls := context.WithCancel(ctx)
		defer stopPolls()
		probing := make(chan struct{})
		defer func() { stopPolls(); <-probing }()
		go func() {
			defer close(probing)
			if r.probeStream(pollCtx, sess, climb) {
				passed.Store(true)
				stopPolls() // ends the poll held now
			}
		}()
		ctx = pollCtx
	}
	healthy := false
	for {
		if passed.Load() {
			return outcomeRetryStream
		}
		cursor, useCursor := c.session.position()
		// The first poll is not held, so the client knows at once that
		// it is connected and gets the open calls.
		hold := gatewayPaths.pollHold(c.api.baseURL, wait)
		if !healthy {
			hold = 0
		}
		sent := time.Now()
		reply, err := c.api.poll(ctx, sess, cursor, useCursor, hold)
		switch {
		case passed.Load():
			return outcomeRetryStream
		case ctx.Err() != nil:
			return outcomeStopped
		case isSessionLost(err):
			return outcomeSessionLost
		case err != nil:
			var apiErr *APIError
			if useCursor && errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest {
				// The cursor is beyond the session's stream (a database
				// restored from a backup, every event pruned): poll again
				// without one, which returns every open call.
				c.session.dropCursor()
			}
			noteRefusal(c.reconnect, err)
			if hold > 0 && failedOnTheWay(err) {
				gatewayPaths.pollFailed(c.api.baseURL, hold)
				c.log(LevelInfo, fmt.Sprintf("a poll held %s failed on the way (%v); holding polls for %s",
					hold, err, gatewayPaths.pollHold(c.api.baseURL, wait)))
			}
			c.setState(StateReconnecting, err.Error())
			return outcomeRetry
		}
		c.reconnect.WentLive()
		if hold > 0 && len(reply.Events) == 0 && time.Since(sent) >= hold {
			gatewayPaths.pollHeld(c.api.baseURL, wait)
		}
		healthy = true
		c.setState(StateConnected, TransportPoll)
		replaced := false
		for _, raw := range reply.Events {
			var ev pollEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				c.log(LevelWarn, "ignoring a malformed poll event: "+err.Error())
				continue
			}
			if ev.Type == eventStreamReplaced {
				replaced = true
				continue
			}
			payload := []byte(raw)
			if len(ev.Data) > 0 && ev.Data[0] == '{' {
				payload = ev.Data
			}
			r.handleEvent(ev.Type, payload, sess)
			if ev.Seq > 0 {
				c.session.advance(ev.Seq)
			}
		}
		if reply.Cursor != nil {
			c.session.setCursor(*reply.Cursor)
		}
		if r.takeLost() {
			return outcomeSessionLost
		}
		if replaced {
			c.setState(StateReconnecting, "replaced by a newer connection of this session")
			return outcomeReplaced
		}
	}
}

// probeStream probes the stream now and then, as climb says, while the
// poll stands in for it, until a probe passes (it reports true) or ctx
// ends.
func (r *receiver) probeStream(ctx context.Context, sess sessionCredentials, climb *reconnect.Climb) bool {
	c := r.client
	for {
		if !sleepCtx(ctx, climb.UntilProbe()) {
			return false
		}
		passed, err := c.api.probe(ctx, sess)
		switch {
		case ctx.Err() != nil:
			return false
		case passed:
			return true
		}
		climb.ProbeFailed()
		why := "its first step came only with its end"
		if err != nil {
			why = err.Error()
		}
		c.log(LevelInfo, fmt.Sprintf("probing the stream: %s; staying on the long-poll, next probe in %s", why, climb.UntilProbe().Round(time.Second)))
	}
}

// failedOnTheWay reports whether a held poll's error is one a proxy on the
// way gives a request it holds too long: a 502, 503 or 504 without the
// gateway's error body, a reset or an early end of the connection, a
// timeout.
func failedOnTheWay(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return true // no reply at all: reset, cut, timed out
}

package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
)

// streamOutcome says why a stream or a run of polls ended.
type streamOutcome int

const (
	// outcomeStopped: the client is closing.
	outcomeStopped streamOutcome = iota
	// outcomeRetry: the connection broke; try the same transport again.
	outcomeRetry
	// outcomeHeldBack: the gateway answered but the stream sent no ready
	// in time, so something between holds it back; long-poll instead.
	outcomeHeldBack
	// outcomeRetryStream: long-polled long enough; try the stream again.
	outcomeRetryStream
	// outcomeSessionLost: the gateway refused the session.
	outcomeSessionLost
	// outcomeReplaced: the gateway ended the stream or poll because a
	// newer connection of the session took its place (it keeps a few per
	// session); the client reconnects after its backoff, which keeps
	// growing while replacements follow each other, so that two
	// connections of one session cannot make the gateway spin.
	outcomeReplaced
)

// eventStreamReplaced is the event a stream ends with, and a poll's
// events end with, when a newer connection of the session replaced it.
const eventStreamReplaced = "stream_replaced"

// receive runs the transports until ctx ends: the stream first (unless the
// mode says poll), long-poll when the stream is held back, a new session
// when the gateway refuses the old one. Between connections it waits what
// the client's reconnect policy says: a connection that went live is
// reopened at once.
func (c *Client) receive(ctx context.Context) {
	c.mu.Lock()
	mode := c.transportMode
	c.mu.Unlock()
	useStream := mode != TransportPoll
	for ctx.Err() == nil {
		var outcome streamOutcome
		if useStream {
			outcome = c.runStream(ctx)
		} else {
			outcome = c.runPolls(ctx, mode == TransportAuto)
		}
		switch outcome {
		case outcomeStopped:
			return
		case outcomeHeldBack:
			if mode == TransportAuto {
				c.log(LevelWarn, "the stream sent no ready event in time (a proxy may be buffering it); switching to long-poll")
				useStream = false
				continue
			}
		case outcomeRetryStream:
			useStream = true
			continue
		case outcomeSessionLost:
			if err := c.replaceSession(ctx); err != nil {
				return
			}
			continue
		case outcomeReplaced:
			c.reconnect.NotLive()
			c.log(LevelWarn, "a newer connection of this session replaced this one; reconnecting after the backoff")
		}
		if !sleepCtx(ctx, c.reconnect.Next()) {
			return
		}
	}
}

// takeSessionLost reports (and consumes) a session refusal seen by the
// outbox.
func (c *Client) takeSessionLost() bool {
	c.mu.Lock()
	ch := c.sessionLost
	c.mu.Unlock()
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sessionLostChan returns the channel the outbox signals a refusal on.
func (c *Client) sessionLostChan() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionLost
}

// streamPosition returns the cursor to resume from, and whether to use it.
// A process that has just resumed its session asks for the open calls
// instead of replaying from the stored cursor: a call delivered before the
// cursor may still be unanswered.
func (c *Client) streamPosition() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor, c.haveCursor
}

// advanceCursor records an event's sequence number.
func (c *Client) advanceCursor(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq > c.cursor || !c.haveCursor {
		c.cursor = max(seq, c.cursor)
		c.haveCursor = true
	}
}

// setCursor records the cursor a poll reply names.
func (c *Client) setCursor(cursor int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursor, c.haveCursor = cursor, true
}

// handleEvent acts on one event of the stream or a poll reply.
func (c *Client) handleEvent(eventType string, data []byte, sess sessionCredentials) {
	switch eventType {
	case toolgate.EventToolCallRequest:
		var req toolgate.ToolCallRequest
		if err := json.Unmarshal(data, &req); err != nil || req.ID == "" {
			c.log(LevelWarn, fmt.Sprintf("ignoring a malformed tool_call_request: %v", err))
			return
		}
		call := newCall(c, sess, req)
		if !c.calls.admit(call) {
			c.log(LevelDebug, "call "+req.ID+" delivered again; already taken")
			return
		}
		c.log(LevelDebug, fmt.Sprintf("call %s: %s (attempt %d)", req.ID, req.Name, req.Attempt))
		c.mu.Lock()
		exec := c.exec
		c.mu.Unlock()
		if exec != nil {
			exec.submit(call)
		}
	case toolgate.EventCallCancelled:
		var msg toolgate.CallCancelled
		if err := json.Unmarshal(data, &msg); err != nil || msg.ID == "" {
			c.log(LevelWarn, fmt.Sprintf("ignoring a malformed call_cancelled: %v", err))
			return
		}
		if call := c.calls.cancel(msg.ID, msg.Reason); call != nil {
			c.log(LevelInfo, fmt.Sprintf("call %s cancelled by the gateway (%s)", msg.ID, msg.Reason))
		}
	case toolgate.EventReady, toolgate.EventPing, eventStreamReplaced:
		// Liveness, or the end of a replaced connection: the transports
		// watch for them.
	default:
		c.log(LevelDebug, "ignoring an event of type "+eventType)
	}
}

// isSessionLost reports whether err is the gateway refusing the session.
func isSessionLost(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.sessionLost()
}

// sleepCtx waits d, or less when ctx ends; it reports whether ctx is still
// live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

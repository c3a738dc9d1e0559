package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/reconnect"
)

// streamOutcome says why a stream or a run of polls ended.
type streamOutcome int

const (
	// outcomeStopped: the client is closing.
	outcomeStopped streamOutcome = iota
	// outcomeRetry: the connection broke; try the same transport again.
	outcomeRetry
	// outcomeHeldBack: the stream sent no ready in time, or its ready
	// only with its end, so something between holds it back; long-poll
	// instead.
	outcomeHeldBack
	// outcomeRetryStream: a probe found that the stream passes again; go
	// back to it.
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

// receiver runs the transports of one connection (from Connect to
// Close) and hands the calls they bring to its executor. It owns the
// executor, the signal of a session refusal seen elsewhere (by the
// outbox), and the end of its loop.
type receiver struct {
	client *Client
	exec   *executor
	lost   chan struct{}      // a refusal of the session, seen by the outbox
	cancel context.CancelFunc // stops receiving calls
	done   chan struct{}      // closed when receiving has stopped
}

func newReceiver(c *Client, exec *executor, cancel context.CancelFunc) *receiver {
	return &receiver{client: c, exec: exec, lost: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
}

// stop stops receiving calls and waits until the loop has ended.
func (r *receiver) stop() {
	r.cancel()
	<-r.done
}

// run runs the transports until ctx ends: the stream first (unless the
// mode says poll), long-poll when the stream is held back (probing the
// stream now and then to climb back: reconnect.Climb), a new session when
// the gateway refuses the old one. Between connections it waits what the
// client's reconnect policy says: a connection that went live is reopened
// at once. It closes done when it returns.
func (r *receiver) run(ctx context.Context) {
	defer close(r.done)
	c := r.client
	c.mu.Lock()
	mode, probeEvery := c.transportMode, c.probeEvery
	c.mu.Unlock()
	useStream := mode != TransportPoll
	var climb *reconnect.Climb // set while the poll stands in for a held-back stream
	defer c.path.noteProbing(false)
	for ctx.Err() == nil {
		var outcome streamOutcome
		if useStream {
			outcome = r.runStream(ctx)
		} else {
			outcome = r.runPolls(ctx, climb)
		}
		switch outcome {
		case outcomeStopped:
			return
		case outcomeHeldBack:
			if mode == TransportAuto {
				if climb == nil {
					climb = reconnect.NewClimb(probeEvery)
				}
				climb.Downgraded()
				c.path.noteProbing(true)
				c.log(LevelWarn, fmt.Sprintf("a proxy holds the stream back (no ready event in time, or only with its end); switching to long-poll, probing the stream in %s",
					climb.UntilProbe().Round(time.Second)))
				useStream = false
				continue
			}
		case outcomeRetryStream:
			climb.Climbed()
			c.path.noteProbing(false)
			c.log(LevelInfo, "the stream passes the path again (a probe went through); switching back to the stream")
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

// noteLost tells the loop that the gateway refused the session's token.
func (r *receiver) noteLost() {
	select {
	case r.lost <- struct{}{}:
	default:
	}
}

// takeLost reports (and consumes) a session refusal seen by the outbox.
func (r *receiver) takeLost() bool {
	select {
	case <-r.lost:
		return true
	default:
		return false
	}
}

// handleEvent acts on one event of the stream or a poll reply.
func (r *receiver) handleEvent(eventType string, data []byte, sess sessionCredentials) {
	c := r.client
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
		if r.exec != nil {
			r.exec.submit(call)
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

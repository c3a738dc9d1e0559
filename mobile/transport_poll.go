package mobile

import (
	"context"
	"encoding/json"
	"time"
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
// or (when it stands in for a held-back stream) the time to try the stream
// again. The second result says whether a poll succeeded.
func (c *Client) runPolls(ctx context.Context, standIn bool) (streamOutcome, bool) {
	sess, _ := c.credentials()
	c.mu.Lock()
	wait, streamRetry := c.pollWait, c.streamRetry
	c.mu.Unlock()
	if wait <= 0 {
		wait = defaultPollWait
	}
	started := time.Now()
	healthy := false
	for {
		if standIn && time.Since(started) > streamRetry {
			return outcomeRetryStream, healthy
		}
		cursor, useCursor := c.streamPosition()
		// The first poll is not held, so the client knows at once that
		// it is connected and gets the open calls.
		hold := wait
		if !healthy {
			hold = 0
		}
		reply, err := c.api.poll(ctx, sess, cursor, useCursor, hold)
		switch {
		case ctx.Err() != nil:
			return outcomeStopped, healthy
		case isSessionLost(err):
			return outcomeSessionLost, healthy
		case err != nil:
			c.setState(StateReconnecting, err.Error())
			return outcomeRetry, healthy
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
			c.handleEvent(ev.Type, payload, sess)
			if ev.Seq > 0 {
				c.advanceCursor(ev.Seq)
			}
		}
		if reply.Cursor != nil {
			c.setCursor(*reply.Cursor)
		}
		if c.takeSessionLost() {
			return outcomeSessionLost, healthy
		}
		if replaced {
			c.setState(StateReconnecting, "replaced by a newer connection of this session")
			return outcomeReplaced, healthy
		}
	}
}

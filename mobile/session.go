package mobile

import (
	"context"
	"errors"
	"fmt"
	"time"

	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate"
)

// establish resumes the stored session or creates one, then registers
// every tool with replace, so the gateway's list is exactly this client's.
// A stored session the gateway no longer accepts is replaced by a new one.
// regMu must be held.
func (c *Client) establish(ctx context.Context) error {
	c.mu.Lock()
	store := c.store
	c.mu.Unlock()
	state, err := store.Load()
	if err != nil {
		c.log(LevelWarn, "reading the stored session failed, starting a new one: "+err.Error())
		state = nil
	}
	if state != nil && state.GatewayURL != "" && state.GatewayURL != c.api.baseURL {
		c.log(LevelInfo, fmt.Sprintf("the stored session belongs to %s, not %s; starting a new one", state.GatewayURL, c.api.baseURL))
		state = nil
	}
	if state != nil {
		sess := sessionCredentials{id: state.SessionID, token: state.Token}
		err := c.syncToolsLocked(ctx, sess)
		var apiErr *APIError
		if err == nil {
			c.adoptSession(sess, state.Cursor, false)
			c.log(LevelInfo, "resumed session "+sess.id)
			return nil
		} else if !errors.As(err, &apiErr) || !apiErr.sessionLost() {
			return err
		}
		c.log(LevelWarn, fmt.Sprintf("the gateway no longer accepts session %s (%s); starting a new one", sess.id, apiErr.Message))
	}
	return c.createSession(ctx)
}

// createSession creates a session, registers the tools on it and stores it.
// regMu must be held.
func (c *Client) createSession(ctx context.Context) error {
	c.mu.Lock()
	key := c.clientKey
	req := toolgate.CreateSessionRequest{Client: c.clientInfo, Metadata: c.metadata}
	c.mu.Unlock()
	reply, err := c.api.createSession(ctx, key, req)
	if err != nil {
		return fmt.Errorf("creating a session: %w", err)
	}
	sess := sessionCredentials{id: reply.SessionID, token: reply.Token}
	c.mu.Lock()
	if reply.HeartbeatMS > 0 {
		c.heartbeat = time.Duration(reply.HeartbeatMS) * time.Millisecond
	}
	if c.pollWait == 0 && reply.PollWaitMS > 0 {
		c.pollWait = time.Duration(reply.PollWaitMS) * time.Millisecond
	}
	c.mu.Unlock()
	// Stored first: a client killed right after still finds its session.
	c.adoptSession(sess, 0, true)
	c.saveState()
	c.log(LevelInfo, "created session "+sess.id)
	return c.syncToolsLocked(ctx, sess)
}

// adoptSession makes sess the current session. A new session starts a new
// event log and a new set of call ids.
func (c *Client) adoptSession(sess sessionCredentials, cursor int64, isNew bool) {
	changed := c.session.adopt(sess, cursor)
	if changed && isNew {
		c.calls.reset()
		if n := c.outbox.drop(); n > 0 {
			c.log(LevelWarn, fmt.Sprintf("dropped %d answer(s) for the previous session", n))
		}
	}
}

// noteSessionLost tells the receive loop, if one runs, that the gateway
// refused the session's token.
func (c *Client) noteSessionLost() {
	c.mu.Lock()
	recv := c.recv
	c.mu.Unlock()
	if recv != nil {
		recv.noteLost()
	}
}

// replaceSession creates a new session after the gateway refused the old
// one (it expired, or was closed), retrying with backoff until it works or
// ctx ends.
func (c *Client) replaceSession(ctx context.Context) error {
	c.setState(StateReconnecting, "session refused by the gateway")
	c.mu.Lock()
	store := c.store
	c.mu.Unlock()
	if err := store.Clear(); err != nil {
		c.log(LevelWarn, "clearing the stored session: "+err.Error())
	}
	c.calls.cancelAll("session_closed")
	c.reconnect.NotLive() // no session, so nothing is live: each failure counts
	return backoff.RetryNotify(func() error {
		c.regMu.Lock()
		defer c.regMu.Unlock()
		err := c.createSession(ctx)
		if err != nil {
			noteRefusal(c.reconnect, err)
		}
		return err
	}, backoff.WithContext(policyBackOff{c.reconnect}, ctx), func(err error, wait time.Duration) {
		c.log(LevelWarn, fmt.Sprintf("creating a new session failed, retrying in %s: %v", wait.Round(time.Millisecond), err))
	})
}

package mobile

import (
	"errors"
	"time"

	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate/internal/reconnect"
)

// noteRefusal gives the client's reconnect policy the Retry-After of a
// refused attempt (a 429 or 503 of the gateway or a proxy).
func noteRefusal(p *reconnect.Policy, err error) {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		p.RetryAfter(apiErr.retryAfter)
	}
}

// sseReconnect is the policy as r3labs/sse's ReconnectStrategy (a
// backoff.BackOff): the library asks it after every connection of the
// stream that ended with an error or could not open. ended runs first,
// on the library's goroutine, with the connection just over, and reports
// whether to stop: a proxy held the connection back (its ready came only
// with its end) and the long-poll is to stand in.
type sseReconnect struct {
	policy *reconnect.Policy
	ended  func() (stop bool)
}

// NextBackOff implements backoff.BackOff; it gives up only when ended says
// so (otherwise the stream ends when the client closes, through its
// context).
func (r sseReconnect) NextBackOff() time.Duration {
	if r.ended() {
		return backoff.Stop
	}
	return r.policy.Next()
}

// Reset implements backoff.BackOff. The library calls it when a
// subscription starts; the policy counts from zero again only when a
// connection goes live, so it does nothing.
func (r sseReconnect) Reset() {}

// policyBackOff is the policy as a backoff.BackOff for a retry loop of
// attempts that go live only by succeeding (creating a session).
type policyBackOff struct{ policy *reconnect.Policy }

// NextBackOff implements backoff.BackOff.
func (b policyBackOff) NextBackOff() time.Duration { return b.policy.Next() }

// Reset implements backoff.BackOff; see sseReconnect.Reset.
func (b policyBackOff) Reset() {}

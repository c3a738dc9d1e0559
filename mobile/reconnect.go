package mobile

import (
	"errors"
	"time"

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
// on the library's goroutine, with the connection just over.
type sseReconnect struct {
	policy *reconnect.Policy
	ended  func()
}

// NextBackOff implements backoff.BackOff; it never gives up (the stream
// ends when the client closes, through its context).
func (r sseReconnect) NextBackOff() time.Duration {
	r.ended()
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

package engine

import "github.com/toolgate/toolgate"

// BusyRetryAfterSeconds is the Retry-After of a refusal whose end no
// clock tells (calls or runs still open end when they end): a few
// seconds, long enough not to be hammered, short enough to be polite.
const BusyRetryAfterSeconds = 5

// tooManyOpenCalls refuses a call to a session that already has limit
// calls not yet final (Options.MaxOpenCallsPerSession). The count is the
// engine's own (callWaiters, kept from insert to end and rebuilt at
// start-up), so the check reads nothing from the store.
func tooManyOpenCalls(sid string, limit int) error {
	err := toolgate.Errorf(toolgate.ERateLimited,
		"session %s already has %d calls not yet answered, the most one session may have; retry when some have ended", sid, limit)
	err.RetryAfterSeconds = BusyRetryAfterSeconds
	return err.WithDetails(map[string]any{"retry_after_seconds": BusyRetryAfterSeconds, "limit": limit})
}

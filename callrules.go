package toolgate

import "time"

// The rules every call to a tool obeys, whoever makes it (a caller of
// POST /v1/calls or a run's model): the approval its spec requires and its
// rate limit. The gateway applies them when it stores a call.

// NeedsApproval reports whether a call to a tool with requirement req must
// wait for approval, given the session's auto-approve setting:
// unless_auto_approved is waived by auto-approve, always never is.
func NeedsApproval(req Approval, autoApprove bool) bool {
	switch req {
	case ApprovalAlways:
		return true
	case ApprovalUnlessAutoApproved:
		return !autoApprove
	}
	return false
}

// RateLimitHorizon is how far back CheckRateLimit needs to see calls: the
// longest window a rate limit has.
const RateLimitHorizon = time.Hour

// CheckRateLimit decides whether one more call to tool fits its rate limit.
// recent holds the creation times of the calls of that tool and session in
// the last RateLimitHorizon, oldest first (stored calls, whatever became of
// them, so a restart resets nothing). Over a limit it returns
// RATE_LIMITED with the seconds until a slot frees in RetryAfterSeconds.
func CheckRateLimit(tool string, rl *RateLimit, recent []time.Time, now time.Time) error {
	if rl == nil {
		return nil
	}
	windows := []struct {
		limit int
		span  time.Duration
		name  string
	}{
		{rl.RequestsPerMinute, time.Minute, "minute"},
		{rl.RequestsPerHour, time.Hour, "hour"},
	}
	var worst time.Duration
	var which string
	var limit int
	for _, w := range windows {
		if w.limit <= 0 {
			continue
		}
		start := now.Add(-w.span)
		first := 0
		for first < len(recent) && recent[first].Before(start) {
			first++
		}
		inWindow := recent[first:]
		if len(inWindow) < w.limit {
			continue
		}
		// The slot frees when the call that puts the count at the limit
		// leaves the window.
		frees := inWindow[len(inWindow)-w.limit].Add(w.span)
		if wait := frees.Sub(now); wait > worst || which == "" {
			worst, which, limit = wait, w.name, w.limit
		}
	}
	if which == "" {
		return nil
	}
	seconds := int((worst + time.Second - 1) / time.Second)
	if seconds < 1 {
		seconds = 1
	}
	e := Errorf(ERateLimited, "%s allows %d calls per %s in this session; retry in %d s", tool, limit, which, seconds)
	e.RetryAfterSeconds = seconds
	e.Details = map[string]any{"retry_after_seconds": seconds, "limit": limit, "window": which}
	return e
}

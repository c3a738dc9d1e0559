package server

import (
	"math"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/keyedlimit"
)

// maxTrackedRunSessions bounds the sessions whose run-start buckets are
// kept at once (see keyedlimit: a bucket full again is dropped first).
const maxTrackedRunSessions = 16384

// runLimits bounds the runs started with a session's token (each one a
// series of requests to the operator's paid model): how many may be in
// progress at once per session and in the whole gateway, and how fast a
// session may start them (the pace per client address is the handlers'
// part: handlers.MountAgent). Runs started with the agent key are not
// counted. It owns the count of the runs in progress: a slot is taken
// when a run is admitted (or resumed at start-up) and given back when its
// goroutine ends.
type runLimits struct {
	maxInProgress int                 // per session; 0 or less: no bound
	maxTotal      int                 // in the whole gateway; 0 or less: no bound
	starts        *keyedlimit.Buckets // nil: no bound on the pace

	mu         sync.Mutex
	inProgress map[string]int // by the session that started them
	total      int            // the sum of inProgress
}

func newRunLimits(cfg Config) *runLimits {
	return &runLimits{
		maxInProgress: cfg.MaxRunsPerSession,
		maxTotal:      cfg.MaxSessionRuns,
		starts:        keyedlimit.New(cfg.RunRate, cfg.RunBurst, maxTrackedRunSessions),
		inProgress:    map[string]int{},
	}
}

// admit takes a slot for a new run started by session sid, or refuses it
// with 429 RATE_LIMITED: when the session has its most runs in progress,
// or the gateway its most runs started by sessions (Retry-After: a few
// seconds), or the session has started runs faster than its pace
// (Retry-After: the seconds until it may start one). The caller gives the
// slot back with done when the run ends, or is not started after all.
func (l *runLimits) admit(sid string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxInProgress > 0 && l.inProgress[sid] >= l.maxInProgress {
		err := toolgate.Errorf(toolgate.ERateLimited,
			"session %s already has %d runs in progress, the most one session may have; retry when one has ended", sid, l.maxInProgress)
		err.RetryAfterSeconds = busyRetryAfterSeconds
		return err.WithDetails(map[string]any{"retry_after_seconds": busyRetryAfterSeconds, "limit": l.maxInProgress})
	}
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		err := toolgate.Errorf(toolgate.ERateLimited,
			"the gateway already has %d runs started by sessions in progress, the most it allows; retry when one has ended", l.maxTotal)
		err.RetryAfterSeconds = busyRetryAfterSeconds
		return err.WithDetails(map[string]any{"retry_after_seconds": busyRetryAfterSeconds, "limit": l.maxTotal})
	}
	if ok, wait := l.starts.Take(sid, now); !ok {
		seconds := int(math.Ceil(wait.Seconds()))
		err := toolgate.Errorf(toolgate.ERateLimited, "session %s is starting runs too fast; retry in %d s", sid, seconds)
		err.RetryAfterSeconds = seconds
		return err.WithDetails(map[string]any{"retry_after_seconds": seconds})
	}
	l.inProgress[sid]++
	l.total++
	return nil
}

// resumed counts a run of session sid that a stopped process left in
// progress and this one goes on with: it takes a slot without a check.
func (l *runLimits) resumed(sid string) {
	l.mu.Lock()
	l.inProgress[sid]++
	l.total++
	l.mu.Unlock()
}

// done gives back the slot of a run of session sid.
func (l *runLimits) done(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inProgress[sid] > 0 {
		l.total--
	}
	if l.inProgress[sid] <= 1 {
		delete(l.inProgress, sid)
	} else {
		l.inProgress[sid]--
	}
}

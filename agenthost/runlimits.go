package agenthost

import (
	"math"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/keyedlimit"
)

// maxTrackedRunSessions bounds the sessions whose run-start buckets are
// kept at once (see keyedlimit: a bucket full again is dropped first).
const maxTrackedRunSessions = 16384

// runLimits bounds the runs started with a session's token (each one a
// series of requests to the operator's paid model): how many may be in
// progress at once per session, per client address and in the whole
// gateway, and how fast a session may start them (the pace per client
// address is the handlers' part: handlers.MountAgent). Runs started with
// the agent key are not counted: the gateway-wide bound is a share of the
// sessions', never the agent's, which always starts. It owns the count of
// the runs in progress: a slot is taken when a run is admitted (or resumed
// at start-up) and given back when its goroutine ends.
type runLimits struct {
	maxInProgress int                 // per session; 0 or less: no bound
	maxPerAddress int                 // per client address; 0 or less: no bound
	maxTotal      int                 // in the whole gateway; 0 or less: no bound
	starts        *keyedlimit.Buckets // nil: no bound on the pace

	mu         sync.Mutex
	inProgress map[string]int // by the session that started them
	byAddress  map[string]int // by the client address they were started from
	total      int            // the sum of inProgress
}

func newRunLimits(cfg Options) *runLimits {
	return &runLimits{
		maxInProgress: cfg.MaxRunsPerSession,
		maxPerAddress: cfg.MaxRunsPerAddress,
		maxTotal:      cfg.MaxSessionRuns,
		starts:        keyedlimit.New(cfg.RunRate, cfg.RunBurst, maxTrackedRunSessions),
		inProgress:    map[string]int{},
		byAddress:     map[string]int{},
	}
}

// busy is the 429 RATE_LIMITED refusal of a run when a share is full.
func busy(limit int, format string, args ...any) error {
	err := toolgate.Errorf(toolgate.ERateLimited, format, args...)
	err.RetryAfterSeconds = engine.BusyRetryAfterSeconds
	return err.WithDetails(map[string]any{"retry_after_seconds": engine.BusyRetryAfterSeconds, "limit": limit})
}

// admit takes a slot for a new run started by a session (origin.Session,
// from origin.Address), or refuses it with 429 RATE_LIMITED: when the
// session has its most runs in progress, or its client address, or the
// gateway its most runs started by sessions (Retry-After: a few seconds),
// or the session has started runs faster than its pace (Retry-After: the
// seconds until it may start one). The caller gives the slot back with
// done when the run ends, or is not started after all.
func (l *runLimits) admit(origin handlers.RunOrigin, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sid, addr := origin.Session, origin.Address
	if l.maxInProgress > 0 && l.inProgress[sid] >= l.maxInProgress {
		return busy(l.maxInProgress,
			"session %s already has %d runs in progress, the most one session may have; retry when one has ended", sid, l.maxInProgress)
	}
	if l.maxPerAddress > 0 && addr != "" && l.byAddress[addr] >= l.maxPerAddress {
		return busy(l.maxPerAddress,
			"client address %s already has %d runs started by sessions in progress, the most one address may have (--max-runs-per-address); retry when one has ended", addr, l.maxPerAddress)
	}
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		return busy(l.maxTotal,
			"the gateway already has %d runs started by sessions in progress, the most it allows; retry when one has ended", l.maxTotal)
	}
	if ok, wait := l.starts.Take(sid, now); !ok {
		seconds := int(math.Ceil(wait.Seconds()))
		err := toolgate.Errorf(toolgate.ERateLimited, "session %s is starting runs too fast; retry in %d s", sid, seconds)
		err.RetryAfterSeconds = seconds
		return err.WithDetails(map[string]any{"retry_after_seconds": seconds})
	}
	l.take(origin)
	return nil
}

// resumed counts a run that a stopped process left in progress and this
// one goes on with: it takes a slot without a check (its address is not
// known again).
func (l *runLimits) resumed(origin handlers.RunOrigin) {
	l.mu.Lock()
	l.take(origin)
	l.mu.Unlock()
}

func (l *runLimits) take(origin handlers.RunOrigin) {
	l.inProgress[origin.Session]++
	if origin.Address != "" {
		l.byAddress[origin.Address]++
	}
	l.total++
}

// done gives back the slot of a run.
func (l *runLimits) done(origin handlers.RunOrigin) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inProgress[origin.Session] > 0 {
		l.total--
	}
	decrement(l.inProgress, origin.Session)
	if origin.Address != "" {
		decrement(l.byAddress, origin.Address)
	}
}

// decrement takes one from counts[key], dropping the key at zero.
func decrement(counts map[string]int, key string) {
	if counts[key] <= 1 {
		delete(counts, key)
	} else {
		counts[key]--
	}
}

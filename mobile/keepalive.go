package mobile

import (
	"sync"
	"time"
)

// What a process learns of the path to a gateway (docs/PROTOCOL.md,
// "Keep-alive and reconnection"): the heartbeat its streams ask, after
// idle cuts, and the hold of its long-polls, after a proxy's 502/503/504.
const (
	// cutSimilarity is how close two idle cuts' ages must be (as a share
	// of the larger) to be taken for the same proxy's idle limit.
	cutSimilarity = 0.25
	// heartbeatShare of the shorter of the two ages is the heartbeat then
	// asked: well below the limit, whatever a ping's own delay.
	heartbeatShare    = 0.4
	minAskedHeartbeat = time.Second
	// minPollHold is the least a failing held poll is cut down to, and
	// pollHoldGrowth the factor a clean full hold grows it back by.
	minPollHold    = time.Second
	pollHoldGrowth = 1.25
	// maxRememberedGateways bounds the gateways a process keeps lessons
	// of (an app speaks to one or two).
	maxRememberedGateways = 64
)

// pathLessons keeps, per gateway URL, what the process's clients learned of
// the path to it: every Client of the process shares them, as a browser's
// tabs of one origin share theirs. In memory only.
type pathLessons struct {
	mu    sync.Mutex
	byURL map[string]*pathLesson
}

// pathLesson is what was learned of the path to one gateway.
type pathLesson struct {
	// lastCut is the idle time before the previous live stream was cut
	// (zero when the previous stream did not end by an idle cut).
	lastCut time.Duration
	// heartbeat is the ping interval streams ask (zero: the gateway's).
	heartbeat time.Duration
	// pollHold is the hold of a long-poll (zero: the full poll wait).
	pollHold time.Duration
}

// gatewayPaths is the process's lessons.
var gatewayPaths = &pathLessons{byURL: map[string]*pathLesson{}}

// lessonLocked returns the lesson of url, making room for it when new.
func (p *pathLessons) lessonLocked(url string) *pathLesson {
	l := p.byURL[url]
	if l == nil {
		if len(p.byURL) >= maxRememberedGateways {
			clear(p.byURL) // a process speaking to so many gateways starts again
		}
		l = &pathLesson{}
		p.byURL[url] = l
	}
	return l
}

// heartbeat returns the ping interval streams to url ask, zero for the
// gateway's default.
func (p *pathLessons) heartbeat(url string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lessonLocked(url).heartbeat
}

// streamEnded records how a live stream to url ended: cut when it ended
// without the gateway ending it, after idle without an event or a ping,
// while pinged every heartbeat. Two idle cuts in a row at similar idle
// times, each before a ping was due (so that a ping would have kept the
// connection), make the streams ask a heartbeat well below them. It
// returns the heartbeat to ask from now on and whether it changed.
func (p *pathLessons) streamEnded(url string, cut bool, idle, heartbeat time.Duration) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lessonLocked(url)
	if !cut || idle <= 0 || idle >= heartbeat {
		l.lastCut = 0 // not an idle cut: a ping was due (a stall), or the gateway ended it
		return l.heartbeat, false
	}
	prev := l.lastCut
	l.lastCut = idle
	if prev == 0 || float64(absDuration(prev-idle)) > cutSimilarity*float64(max(prev, idle)) {
		return l.heartbeat, false
	}
	asked := max(minAskedHeartbeat, time.Duration(heartbeatShare*float64(min(prev, idle))).Truncate(time.Millisecond))
	l.lastCut = 0
	if l.heartbeat != 0 && asked >= l.heartbeat {
		return l.heartbeat, false
	}
	l.heartbeat = asked
	return asked, true
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// pollHold returns the hold of the next long-poll to url, at most wait.
func (p *pathLessons) pollHold(url string, wait time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.lessonLocked(url).pollHold; h > 0 && h < wait {
		return h
	}
	return wait
}

// pollFailed halves the hold of long-polls to url after a held poll failed
// (a proxy's 502, 503 or 504, a reset, a timeout), not below minPollHold.
func (p *pathLessons) pollFailed(url string, held time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lessonLocked(url)
	l.pollHold = max(held/2, min(minPollHold, held))
}

// pollHeld grows the hold of long-polls to url back after a poll that
// ran its full hold cleanly, up to wait.
func (p *pathLessons) pollHeld(url string, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lessonLocked(url)
	if l.pollHold == 0 {
		return
	}
	l.pollHold = time.Duration(float64(l.pollHold) * pollHoldGrowth)
	if l.pollHold >= wait {
		l.pollHold = 0
	}
}

package mcpserve

import (
	"sync"
	"time"
)

// changeQueue holds the sources whose tools changed and have not been
// looked at yet (a session id, "" for the gateway's own), each once however
// often it changed: the engine's watch callback adds without blocking, the
// sync goroutine takes them all. It holds at most one entry per source.
type changeQueue struct {
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func newChangeQueue() *changeQueue {
	return &changeQueue{pending: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// add notes that source's tools changed.
func (q *changeQueue) add(source string) {
	q.mu.Lock()
	q.pending[source] = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the sources noted since the last take.
func (q *changeQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, len(q.pending))
	for source := range q.pending {
		out = append(out, source)
	}
	clear(q.pending)
	return out
}

// syncLoop brings the lists up to date after each change, until Close,
// paced by listPacer: a client flipping its tools in a loop makes each
// route's hosts get list_changed a few times a second at most (every
// change gathered meanwhile is in the next update).
func (e *Endpoint) syncLoop() {
	defer close(e.done)
	defer e.listingDone()
	pace := newListPacer(e.opts.ListInterval, time.Now())
	for {
		select {
		case <-e.life.Done():
			return
		case <-e.changes.wake:
		}
		if wait := pace.reserve(time.Now()); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-e.life.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		for _, source := range e.changes.take() {
			if e.life.Err() != nil {
				return
			}
			e.refresh(source)
		}
		// The first round holds every source Start added.
		e.listingDone()
	}
}

// refresh brings what lists source's tools up to date: /mcp, and the
// session's own route if it has one (dropped once the session is closed).
func (e *Endpoint) refresh(source string) {
	if source == "" {
		e.refreshGatewayTools()
		return
	}
	e.refreshSessionTools(source)
	if rt := e.existingSessionRoute(source); rt != nil && !e.syncSessionRoute(rt, source) {
		e.dropSession(source)
	}
}

// refreshGatewayTools lists on /mcp the tools called without a session
// that can be called now, under their own names.
func (e *Endpoint) refreshGatewayTools() {
	var offers []offer
	for _, t := range e.remote.GatewayTools() {
		if !t.Online {
			continue
		}
		key := toolKey{"", t.Name}
		name := e.names.assign(key, gatewayToolName(t.Name))
		if name == "" {
			e.log.Warn("MCP: a gateway tool is not listed on /mcp: a session's tool holds its name", "tool", t.Name)
			continue
		}
		offers = append(offers, newOffer(key, name, e.screened(t), "", e.callHandler("", t.Name)))
	}
	e.releaseNames(e.gateway.tools.replace("", offers))
}

// refreshSessionTools lists on /mcp the tools of session sid while it is
// reachable, named <tool>__<h> (sessionToolNames).
func (e *Endpoint) refreshSessionTools(sid string) {
	var offers []offer
	view, err := e.views.SessionView(e.life, sid)
	if err == nil && view.ClosedAt == nil {
		note := e.ownerNote(view)
		for _, t := range view.Tools {
			if !t.Online {
				continue
			}
			key := toolKey{sid, t.Name}
			name := e.names.assign(key, sessionToolNames(t.Name, sid)...)
			if name == "" {
				e.log.Warn("MCP: a session's tool is not listed on /mcp: its names are taken", "session", sid, "tool", t.Name)
				continue
			}
			offers = append(offers, newOffer(key, name, e.screened(t), note, e.callHandler(sid, t.Name)))
		}
	}
	e.releaseNames(e.gateway.tools.replace(sid, offers))
}

// releaseNames frees the /mcp names of tools no longer listed.
func (e *Endpoint) releaseNames(keys []toolKey) {
	for _, k := range keys {
		e.names.release(k)
	}
}

// listBurst is how many list updates may follow one another at once
// before they are paced one per ListInterval.
const listBurst = 5

// listPacer paces the list updates: a token bucket of listBurst tokens,
// one more each interval. Only the sync goroutine uses it.
type listPacer struct {
	interval time.Duration
	tokens   float64
	at       time.Time // when tokens was counted
}

func newListPacer(interval time.Duration, now time.Time) *listPacer {
	return &listPacer{interval: interval, tokens: listBurst, at: now}
}

// reserve takes a token for an update to begin now, and returns how long
// to wait before it may (0: at once).
func (p *listPacer) reserve(now time.Time) time.Duration {
	if elapsed := now.Sub(p.at); elapsed > 0 {
		p.tokens = min(listBurst, p.tokens+float64(elapsed)/float64(p.interval))
		p.at = now
	}
	if p.tokens >= 1 {
		p.tokens--
		return 0
	}
	wait := time.Duration((1 - p.tokens) * float64(p.interval))
	p.tokens = 0
	p.at = p.at.Add(wait)
	return wait
}

package mcpimport

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
)

// maxProgressMessage bounds the message of a progress report, in
// characters, so that a report stays far inside the gateway's 16 KiB.
const maxProgressMessage = 1000

// progressRoutes sends each notifications/progress to the call whose
// token it names. A call's reports go through a relay that keeps only the
// latest one not yet passed on, so that a server sending them faster than
// the gateway stores them makes it skip reports, not queue them, and the
// SDK's reading goroutine never waits on the store.
type progressRoutes struct {
	mu     sync.Mutex
	next   uint64
	routes map[string]*progressRelay // by token: the calls in flight
}

// open routes a new token to ctx's progress reporter until stop, which
// passes on the last report not yet passed on. (The SDK hands a
// notification to its handler on a goroutine of its own, so one the
// server sent just before its result may still come after stop: it is
// dropped.)
func (p *progressRoutes) open(ctx context.Context) (token string, stop func()) {
	relay := &progressRelay{wake: make(chan struct{}, 1)}
	p.mu.Lock()
	p.next++
	token = fmt.Sprintf("toolgate-%d", p.next)
	if p.routes == nil {
		p.routes = map[string]*progressRelay{}
	}
	p.routes[token] = relay
	p.mu.Unlock()
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				// A report that came in just before the result is
				// passed on before the call ends.
				if report := relay.take(); report != nil {
					toolgate.ReportProgress(ctx, report)
				}
				return
			case <-relay.wake:
				if report := relay.take(); report != nil {
					toolgate.ReportProgress(ctx, report)
				}
			}
		}
	}()
	return token, func() {
		p.mu.Lock()
		delete(p.routes, token)
		p.mu.Unlock()
		close(done)
		<-finished
	}
}

// deliver hands a report to the call of token; an unknown token (a call
// that has ended) is dropped.
func (p *progressRoutes) deliver(token string, report json.RawMessage) {
	p.mu.Lock()
	relay := p.routes[token]
	p.mu.Unlock()
	if relay != nil {
		relay.offer(report)
	}
}

// progressRelay holds the latest report of one call not yet passed on.
type progressRelay struct {
	mu     sync.Mutex
	latest json.RawMessage
	wake   chan struct{}
}

func (r *progressRelay) offer(report json.RawMessage) {
	r.mu.Lock()
	r.latest = report
	r.mu.Unlock()
	signal(r.wake)
}

func (r *progressRelay) take() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	report := r.latest
	r.latest = nil
	return report
}

// progressNotified is the client's ProgressNotificationHandler: the
// report becomes {"progress", "total"?, "message"?} on the call whose
// token it names.
func (s *Server) progressNotified(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return // not one of ours: the gateway's tokens are strings
	}
	report := map[string]any{"progress": req.Params.Progress}
	if req.Params.Total > 0 {
		report["total"] = req.Params.Total
	}
	if req.Params.Message != "" {
		report["message"] = cut(req.Params.Message, maxProgressMessage)
	}
	raw, err := marshalJSON(report)
	if err != nil {
		return
	}
	s.progress.deliver(token, raw)
}

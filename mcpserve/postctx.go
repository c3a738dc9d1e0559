package mcpserve

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// postHeader is set by the endpoint on every POST it hands the SDK (any
// value the host sent is replaced): the key under which the request's
// context is found again from a tool handler, through RequestExtra.Header.
const postHeader = "Toolgate-Mcp-Post"

// postContexts tie a tool call's handler to the HTTP request that carried
// it. On a stateful (2025-11-25) session the SDK runs handlers on a context
// of the session, not of the POST: a host that closes the POST's stream
// would leave the call running for no one (the endpoint keeps no events to
// replay, so its result could never be delivered). The handler's context
// therefore ends with the POST's as well. (On the stateless revision the
// SDK does so itself: PropagateRequestCancellation.)
//
// The reply's writer is found the same way (streamingStarted).
type postContexts struct {
	mu   sync.Mutex
	byID map[string]post
}

// post is a POST being served: its context and its reply's writer.
type post struct {
	ctx   context.Context
	reply *streamWriter
}

func newPostContexts() *postContexts {
	return &postContexts{byID: map[string]post{}}
}

// track records r's context and reply for the length of the request (call
// done when it has been served) and returns r with the header that finds
// them.
func (p *postContexts) track(r *http.Request, reply *streamWriter) (*http.Request, func()) {
	id := rand.Text()
	p.mu.Lock()
	p.byID[id] = post{ctx: r.Context(), reply: reply}
	p.mu.Unlock()
	r.Header.Set(postHeader, id)
	return r, func() {
		p.mu.Lock()
		delete(p.byID, id)
		p.mu.Unlock()
	}
}

// tie returns a context that ends when ctx ends or when the POST that
// carried the request does (at once when that POST has already been
// served). Call done when the handler returns.
func (p *postContexts) tie(ctx context.Context, extra *mcp.RequestExtra) (context.Context, func()) {
	if extra == nil || extra.Header == nil || extra.Header.Get(postHeader) == "" {
		return ctx, func() {} // not carried by a POST of this endpoint
	}
	carrier, ok := p.find(extra)
	tied, cancel := context.WithCancel(ctx)
	if !ok {
		cancel()
		return tied, cancel
	}
	stop := context.AfterFunc(carrier.ctx, cancel)
	return tied, func() { stop(); cancel() }
}

// streamingStarted tells the reply of the POST that carried a request
// that its handler now waits (streamWriter.streamingStarted).
func (p *postContexts) streamingStarted(extra *mcp.RequestExtra) {
	if carrier, ok := p.find(extra); ok {
		carrier.reply.streamingStarted()
	}
}

// mute drops the rest of the reply of the POST that carried a request
// (streamWriter.mute).
func (p *postContexts) mute(extra *mcp.RequestExtra) {
	if carrier, ok := p.find(extra); ok {
		carrier.reply.mute()
	}
}

// find returns the POST that carried a request, if it is being served.
func (p *postContexts) find(extra *mcp.RequestExtra) (post, bool) {
	if extra == nil || extra.Header == nil {
		return post{}, false
	}
	id := extra.Header.Get(postHeader)
	if id == "" {
		return post{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	carrier, ok := p.byID[id]
	return carrier, ok
}

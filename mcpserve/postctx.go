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
//
// A durable session (Options.SessionStore) keeps its streams' events, so
// a host whose stream dropped resumes it: there the handler is not tied
// to the POST (MCP: a disconnection is not a cancellation), and the POST
// records the JSON-RPC id of the call it carries and the id of its stream
// (eventStore.Open), which the handler's call is kept under.
type postContexts struct {
	life context.Context // the endpoint's: a durable POST's handler ends with it
	mu   sync.Mutex
	byID map[string]*post
}

// post is a POST being served: its context, its reply's writer, and its
// header (the handler's RequestExtra.Header).
type post struct {
	ctx    context.Context
	reply  *streamWriter
	header http.Header
}

// Headers the endpoint sets on a durable POST it hands the SDK (any value
// the host sent is removed), read by the tool handler through
// RequestExtra.Header even after the POST ended: that it is durable, the
// canonical JSON-RPC id of the one request it carries, and the id of the
// SDK's stream of its reply (set by the event store's Open, before the
// SDK hands the request to a handler).
const (
	durableHeader = "Toolgate-Mcp-Durable"
	requestHeader = "Toolgate-Mcp-Request"
	streamHeader  = "Toolgate-Mcp-Stream"
)

// postKey is the context key under which the POST's id is found by the
// event store's Open.
type postKey struct{}

func newPostContexts(life context.Context) *postContexts {
	return &postContexts{life: life, byID: map[string]*post{}}
}

// track records r's context and reply for the length of the request (call
// done when it has been served) and returns r with the header that finds
// them. A durable POST is not tied (tie), and carries request, the
// canonical id of its one JSON-RPC request.
func (p *postContexts) track(r *http.Request, reply *streamWriter, durable bool, request string) (*http.Request, func()) {
	id := rand.Text()
	r.Header.Del(durableHeader)
	r.Header.Del(requestHeader)
	r.Header.Del(streamHeader)
	if durable {
		r.Header.Set(durableHeader, "1")
		if request != "" {
			r.Header.Set(requestHeader, request)
		}
	}
	p.mu.Lock()
	p.byID[id] = &post{ctx: r.Context(), reply: reply, header: r.Header}
	p.mu.Unlock()
	r.Header.Set(postHeader, id)
	r = r.WithContext(context.WithValue(r.Context(), postKey{}, id))
	return r, func() {
		p.mu.Lock()
		delete(p.byID, id)
		p.mu.Unlock()
	}
}

// tie returns a context that ends when ctx ends or when the POST that
// carried the request does (at once when that POST has already been
// served); a durable POST's, when ctx or the endpoint's life ends. Call
// done when the handler returns.
func (p *postContexts) tie(ctx context.Context, extra *mcp.RequestExtra) (context.Context, func()) {
	if extra == nil || extra.Header == nil || extra.Header.Get(postHeader) == "" {
		return ctx, func() {} // not carried by a POST of this endpoint
	}
	tied, cancel := context.WithCancel(ctx)
	if extra.Header.Get(durableHeader) != "" {
		// Not the POST's: the endpoint's closing ends it (the call is
		// left to the next process, keepsCallsAtClose).
		stop := context.AfterFunc(p.life, cancel)
		return tied, func() { stop(); cancel() }
	}
	carrier, ok := p.find(extra)
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
	if !ok {
		return post{}, false
	}
	return *carrier, true
}

// opened records the id of the stream the SDK opened for the reply of the
// POST whose context is ctx.
func (p *postContexts) opened(ctx context.Context, stream string) {
	id, _ := ctx.Value(postKey{}).(string)
	if id == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if carrier := p.byID[id]; carrier != nil && carrier.header.Get(durableHeader) != "" {
		carrier.header.Set(streamHeader, stream)
	}
}

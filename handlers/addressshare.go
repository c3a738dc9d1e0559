package handlers

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/clientaddr"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// busyRetryAfterSeconds is the Retry-After of a refusal whose end no
// clock tells: a request in flight may end any moment.
const busyRetryAfterSeconds = 5

// The listener bounds the connections one client address holds
// (server's connection share), but a trusted proxy's connections carry
// many clients, and the listener cannot tell them apart. Behind a trusted
// proxy the share is kept here instead: the requests in flight per client
// address (from X-Forwarded-For, see clientAddr), each of which holds a
// connection from the proxy. A stream taken over from net/http keeps its
// place until its connection closes.

// proxiedShares counts the requests in flight per client address that
// came through a trusted proxy. A nil *proxiedShares limits nothing.
type proxiedShares struct {
	limit   int
	trusted []netip.Prefix

	mu       sync.Mutex
	inFlight map[string]int
}

func newProxiedShares(limit int, trusted []netip.Prefix) *proxiedShares {
	if limit <= 0 || len(trusted) == 0 {
		return nil
	}
	return &proxiedShares{limit: limit, trusted: trusted, inFlight: map[string]int{}}
}

// shareSlot is one request's place in its address's share; released once,
// when the request ends or, for a stream taken over, its connection closes.
type shareSlot struct {
	once      sync.Once
	release   func()
	handedOff atomic.Bool // to a taken-over connection (keepShare)
}

type shareSlotKey struct{}

// limitProxied is the middleware that refuses, with 429 RATE_LIMITED and
// Retry-After, a request through a trusted proxy whose client address
// already has its share of requests in flight.
func (p *proxiedShares) limitProxied(next http.Handler) http.Handler {
	if p == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, ok := clientaddr.ParseAddress(r.RemoteAddr)
		if !ok || !clientaddr.IsTrustedProxy(peer, p.trusted) {
			next.ServeHTTP(w, r)
			return
		}
		addr, _ := clientaddr.FromRequest(r, p.trusted)
		key := clientaddr.AddressKey(addr)
		p.mu.Lock()
		if p.inFlight[key] >= p.limit {
			p.mu.Unlock()
			err := toolgate.Errorf(toolgate.ERateLimited,
				"client address %s already has %d requests in flight through the proxy, the most one address may have (--max-connections-per-address); retry when one has ended", addr, p.limit)
			err.RetryAfterSeconds = busyRetryAfterSeconds
			jsonhttp.WriteError(w, r, err.WithDetails(map[string]any{"retry_after_seconds": busyRetryAfterSeconds, "limit": p.limit}))
			return
		}
		p.inFlight[key]++
		p.mu.Unlock()
		slot := &shareSlot{release: func() {
			p.mu.Lock()
			if p.inFlight[key] <= 1 {
				delete(p.inFlight, key)
			} else {
				p.inFlight[key]--
			}
			p.mu.Unlock()
		}}
		defer func() {
			if !slot.handedOff.Load() {
				slot.once.Do(slot.release)
			}
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), shareSlotKey{}, slot)))
	})
}

// keepShare hands the request's place in its address's share (if it has
// one) to conn, a connection taken over from net/http: the place is given
// back when conn closes, not when the handler returns.
func keepShare(r *http.Request, conn net.Conn) net.Conn {
	slot, _ := r.Context().Value(shareSlotKey{}).(*shareSlot)
	if slot == nil {
		return conn
	}
	slot.handedOff.Store(true)
	return &shareConn{Conn: conn, slot: slot}
}

// shareConn gives its share slot back when closed.
type shareConn struct {
	net.Conn
	slot *shareSlot
}

func (c *shareConn) Close() error {
	err := c.Conn.Close()
	c.slot.once.Do(c.slot.release)
	return err
}

package server

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/clientaddr"
)

// One client address (an IPv6 address's /64) holds at most its share of
// the connection limit (Config.MaxConnectionsPerAddress): past it, its
// new connections are closed as soon as they are accepted, so one
// address with many streams cannot fill --max-connections and keep every
// other client waiting in the accept queue. A trusted proxy's connections
// carry many clients and are not counted here; behind it the handlers
// keep the share per client address (handlers.Options.ProxiedAddressShare).

// sharedListener closes the connections of an address past its share.
type sharedListener struct {
	net.Listener
	limit    int
	trusted  []netip.Prefix
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last warning

	mu   sync.Mutex
	open map[string]int // connections open, by address key
}

// shareConnections wraps ln so that each client address holds at most
// limit of its connections; limit 0 or less returns ln.
func shareConnections(ln net.Listener, limit int, trusted []netip.Prefix, log *slog.Logger) net.Listener {
	if limit <= 0 {
		return ln
	}
	return &sharedListener{Listener: ln, limit: limit, trusted: trusted, log: log, open: map[string]int{}}
}

// Accept returns the next connection within its address's share; one
// past it is closed, and the next is accepted.
func (l *sharedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := clientaddr.ParseAddress(c.RemoteAddr().String())
		if !ok || clientaddr.IsTrustedProxy(addr, l.trusted) {
			return c, nil
		}
		key := clientaddr.AddressKey(addr)
		l.mu.Lock()
		if l.open[key] >= l.limit {
			l.mu.Unlock()
			c.Close()
			l.warnFull(key)
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, closed: func() { l.release(key) }}, nil
	}
}

func (l *sharedListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] <= 1 {
		delete(l.open, key)
	} else {
		l.open[key]--
	}
}

// warnFull logs, at most once a minute, that an address's connections
// past its share are closed.
func (l *sharedListener) warnFull(key string) {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if last != 0 && now-last < int64(connLimitWarnEvery) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("a client address holds its share of the connection limit: its new connections are closed (see --max-connections-per-address)",
		"address", key, "limit", l.limit)
}

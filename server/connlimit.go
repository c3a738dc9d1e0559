package server

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"
)

// The gateway serves at most Config.MaxConnections connections at once.
// Past it, new connections wait in the kernel's accept queue until one
// ends, so a flood of connections (thousands of streams, idle keep-alives)
// slows the newcomers down instead of taking the process's last file
// descriptor: an accept failing with EMFILE answers nobody, and the
// database and the log need descriptors too.

// connReserveMin is the fewest file descriptors kept out of the
// connection limit for the database (a writer, up to 8 readers, their WAL
// and shared-memory files), the log, the listener, and the agent loop's
// requests to its model.
const connReserveMin = 64

// connLimitFallback is the connection limit where the file-descriptor
// limit cannot be read (a platform without getrlimit).
const connLimitFallback = 4096

// connLimitWarnEvery is how often, at most, reaching the limit is logged.
const connLimitWarnEvery = time.Minute

// connectionLimit is Config.MaxConnections, or when that is 0 the one
// derived from the process's file-descriptor limit: the soft limit less a
// tenth (at least connReserveMin) kept for the rest of the process. Go
// raises the soft limit to the hard one at start on every Unix (package
// syscall's init, since Go 1.19; on macOS up to kern.maxfilesperproc), so
// the soft limit read here is already the most the process may have.
func connectionLimit(configured int) int {
	if configured > 0 {
		return configured
	}
	limit, ok := fileLimit()
	if !ok {
		return connLimitFallback
	}
	limit = min(limit, 1<<24) // RLIM_INFINITY, or near it
	reserve := max(connReserveMin, limit/10)
	return int(max(limit-reserve, 16))
}

// limitConnections wraps ln so that it holds at most limit connections at
// once: golang.org/x/net/netutil.LimitListener makes Accept wait for a
// slot; the listener it wraps counts the connections open, to log when
// the limit is reached (netutil has no hook for that).
func limitConnections(ln net.Listener, limit int, log *slog.Logger) net.Listener {
	return netutil.LimitListener(&watchedListener{Listener: ln, limit: limit, log: log}, limit)
}

// watchedListener counts the connections it accepted that are still open,
// and warns, at most once a minute, when they reach the limit.
type watchedListener struct {
	net.Listener
	limit    int
	open     atomic.Int64
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last warning
}

// Accept accepts a connection that is counted until it is closed.
func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.open.Add(1) >= int64(l.limit) {
		l.warnFull()
	}
	return &countedConn{Conn: c, closed: func() { l.open.Add(-1) }}, nil
}

// warnFull logs that the limit is reached, at most once a minute.
func (l *watchedListener) warnFull() {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if last != 0 && now-last < int64(connLimitWarnEvery) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("the connection limit is reached: new connections wait to be accepted until one closes (see --max-connections)",
		"limit", l.limit)
}

// countedConn leaves its listener's count when closed (once, however often
// it is closed: net/http and the stream hub may both close it).
type countedConn struct {
	net.Conn
	closeOnce sync.Once
	closed    func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(c.closed)
	return err
}

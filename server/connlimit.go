package server

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
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

// limitListener is a net.Listener that holds at most limit connections at
// once: Accept waits for one of them to close (its slot freed) before it
// accepts the next. It is netutil.LimitListener's technique, with a
// warning when the limit is reached, which that package has no hook for.
type limitListener struct {
	net.Listener
	limit     int
	slots     chan struct{} // a token per connection held
	closed    chan struct{} // closed by Close: a waiting Accept returns
	closeOnce sync.Once
	log       *slog.Logger
	lastWarn  atomic.Int64 // unix nanoseconds of the last warning
}

// limitConnections wraps ln so that it holds at most limit connections.
func limitConnections(ln net.Listener, limit int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, limit: limit, slots: make(chan struct{}, limit), closed: make(chan struct{}), log: log}
}

// Accept waits for a free slot, then accepts a connection that frees it
// when closed.
func (l *limitListener) Accept() (net.Conn, error) {
	if !l.acquire() {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &limitedConn{Conn: c, release: l.release}, nil
}

// acquire takes a slot, waiting while all are held; false when the
// listener closed meanwhile.
func (l *limitListener) acquire() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	case <-l.closed:
		return false
	default:
	}
	l.warnFull()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-l.closed:
		return false
	}
}

func (l *limitListener) release() { <-l.slots }

// warnFull logs that the limit is reached, at most once a minute.
func (l *limitListener) warnFull() {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if last != 0 && now-last < int64(connLimitWarnEvery) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("the connection limit is reached: new connections wait to be accepted until one closes (see --max-connections)",
		"limit", l.limit)
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn frees its listener's slot when closed (once, however often
// it is closed: net/http and the stream hub may both close it).
type limitedConn struct {
	net.Conn
	releaseOnce sync.Once
	release     func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(c.release)
	return err
}
